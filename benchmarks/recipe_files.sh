# The files the shipped recipe reads, for the shell scripts that run it: source it from the
# project root after setting D, the data folder (../shared/data; gpu_teachers.sh's bundle has
# its own copy). The same sets, in the same order, as benchmarks/datasets.py (a test holds the
# two to each other).
# shellcheck shell=bash disable=SC2034
TRAIN=("$D"/semeval14/Restaurants_Train.xml.seg "$D"/semeval14/Laptops_Train.xml.seg
    "$D"/twitter/train.raw "$D"/mams/train.xml)
MORE=("$D"/semeval15/restaurant_train.raw "$D"/television/Television_Train.xml.seg
    "$D"/tshirt/Menstshirt_Train.xml.seg "$D"/yelp/yelp.train.txt "$D"/acos-laptop/train.jsonl)
TESTS=("$D"/semeval14/Restaurants_Test_Gold.xml.seg "$D"/semeval14/Laptops_Test_Gold.xml.seg
    "$D"/twitter/test.raw "$D"/mams/test.xml)
TRANSFER=(runs/transfer-set.jsonl runs/transfer-subst1.jsonl runs/transfer-subst-laptop4.jsonl)
