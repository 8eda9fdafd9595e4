"""The web page in a real browser: Debian's chromium driven headless by Playwright, against
the real app under uvicorn on loopback. Writes a screenshot to tests/artifacts/ (or
$ABSA_TEST_ARTIFACTS). Skipped where chromium or playwright is missing, except in CI
(CI=true), where .ci/run installs both and a skip would hide a broken page."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.service.conftest import make_settings
from tests.service.test_batching import serve

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(os.environ.get("ABSA_TEST_ARTIFACTS", Path(__file__).parents[1] / "artifacts"))


def _playwright():  # type: ignore[no-untyped-def]
    missing = not Path(CHROMIUM).exists()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing = True
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail("the browser test needs chromium and playwright (.ci/run installs them)")
        pytest.skip("chromium or playwright not installed")
    return sync_playwright


@pytest.fixture(scope="module")
def page_url(artifact: Path):  # type: ignore[no-untyped-def]
    with serve(make_settings(artifact)) as url:
        yield url


@pytest.fixture()
def page(page_url: str):  # type: ignore[no-untyped-def]
    sync_playwright = _playwright()
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        pg = browser.new_page()
        pg.goto(page_url + "/")
        yield pg
        browser.close()


def test_type_submit_and_see_labels_and_heatmap(page) -> None:  # type: ignore[no-untyped-def]
    page.fill("#text", "the food was great but the service was awful")
    page.fill("#aspects", "food, service")
    page.click("#analyse")
    page.wait_for_selector(".result")
    titles = page.locator(".result h2").all_inner_texts()
    assert len(titles) == 2
    assert "food" in titles[0] and "positive" in titles[0]
    assert "service" in titles[1] and "negative" in titles[1]
    # one shaded span per word, weights from the API, the aspect outlined
    first = page.locator(".result").first
    words = first.locator(".heat").first.locator("span.w")
    assert words.count() == 9
    weights = [float(w) for w in words.evaluate_all("els => els.map(e => e.dataset.weight)")]
    assert abs(sum(weights) - 1.0) < 1e-3
    assert first.locator(".heat").first.locator("span.aspect").inner_text() == "food"
    # the model has 2 self-attention heads: one more heatmap row each
    assert first.locator(".heat").count() == 3
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "web-page.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000


def test_selected_text_becomes_an_aspect(page) -> None:  # type: ignore[no-untyped-def]
    text = "the pizza was okay but the staff was great"
    page.fill("#text", text)
    start = text.index("staff")
    page.evaluate(f"() => document.getElementById('text').setSelectionRange({start}, {start + 5})")
    page.click("#add-selection")
    assert "staff [" in page.inner_text("#chips")
    page.click("#analyse")
    page.wait_for_selector(".result")
    assert "positive" in page.locator(".result h2").first.inner_text()


def test_api_errors_are_shown_in_words(page) -> None:  # type: ignore[no-untyped-def]
    page.fill("#text", "the food was great")
    page.fill("#aspects", "pizza")
    page.click("#analyse")
    page.wait_for_selector("#error:not([hidden])")
    assert "'pizza' does not occur in the text" in page.inner_text("#error")
    page.fill("#text", "   ")
    page.click("#analyse")
    assert "sentence" in page.inner_text("#error").lower()


def test_an_example_runs_with_one_click(page) -> None:  # type: ignore[no-untyped-def]
    page.click("button.example >> nth=0")
    page.wait_for_selector(".result")
    assert page.locator(".result").count() == 2
