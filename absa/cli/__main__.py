from absa.cli import main

raise SystemExit(main())
