"""The web page in a real browser: Debian's chromium driven headless by Playwright, against
the real app under uvicorn on loopback. Writes a screenshot to tests/artifacts/ (or
$ABSA_TEST_ARTIFACTS). Skipped where chromium or playwright is missing, except in CI
(CI=true), where .ci/run installs both and a skip would hide a broken page."""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
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


@contextmanager
def _offline_page(service_url: str, bypass_csp: bool = True):  # type: ignore[no-untyped-def]
    """A page with no internet: every request that is not to ``service_url`` fails.
    ``bypass_csp``: Playwright's wait_for_function evaluates its predicate with eval, which
    the page's Content-Security-Policy refuses; the test of that policy turns this off."""
    sync_playwright = _playwright()
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        pg = browser.new_page(bypass_csp=bypass_csp)
        outside: list[str] = []

        def only_the_service(route) -> None:  # type: ignore[no-untyped-def]
            if route.request.url.startswith(service_url):
                route.continue_()
            else:
                outside.append(route.request.url)
                route.abort("internetdisconnected")

        pg.route("**/*", only_the_service)
        pg.outside = outside  # type: ignore[attr-defined]
        yield pg
        browser.close()


@pytest.fixture()
def offline_page(page_url: str):  # type: ignore[no-untyped-def]
    with _offline_page(page_url) as pg:
        yield pg


@pytest.fixture()
def page(offline_page, page_url: str):  # type: ignore[no-untyped-def]
    offline_page.goto(page_url + "/")
    return offline_page


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


def test_offsets_past_an_emoji_are_code_points_as_the_api_counts(page) -> None:  # type: ignore[no-untyped-def]
    """An emoji is two UTF-16 units in the browser and one code point in the API: the
    selected aspect is sent in code points, and the heatmap outlines the aspect itself."""
    text = "I \U0001f600 love the burger but the fries were cold"
    page.fill("#text", text)
    units = text.encode("utf-16-le")
    start = units.index("burger".encode("utf-16-le")) // 2  # where the browser selects it
    page.evaluate(f"() => document.getElementById('text').setSelectionRange({start}, {start + 6})")
    page.click("#add-selection")
    at = text.index("burger")  # code points, as Python (and the API) count
    assert f"burger [{at}:{at + 6}]" in page.inner_text("#chips")
    page.fill("#aspects", "fries")  # a typed aspect: its span comes back from the API
    page.click("#analyse")
    page.wait_for_function("document.querySelectorAll('.result').length === 2")
    assert page.locator("#error").is_hidden()
    outlined = page.locator(".result").evaluate_all(
        "rs => rs.map(r => r.querySelector('.heat span.aspect').textContent)"
    )
    assert sorted(outlined) == ["burger", "fries"]


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


def test_api_docs_render_without_internet(offline_page, page_url: str) -> None:  # type: ignore[no-untyped-def]
    """/docs is Swagger UI from files the service ships, not from a CDN (issue #13, item 17)."""
    offline_page.goto(page_url + "/docs")
    offline_page.wait_for_selector(".swagger-ui .info .title", timeout=15_000)
    assert "absa" in offline_page.inner_text(".swagger-ui .info .title")
    offline_page.wait_for_selector(".opblock-summary-path")
    paths = offline_page.locator(".opblock-summary-path").all_inner_texts()
    assert any("/v1/predict" in p for p in paths), paths
    assert offline_page.outside == []  # nothing was asked of the internet


# --------------------------------------------------------------------------- issue #13, item 20


def test_enter_submits(page) -> None:  # type: ignore[no-untyped-def]
    page.fill("#text", "the food was great but the service was awful")
    page.fill("#aspects", "food")
    page.press("#aspects", "Enter")
    page.wait_for_selector(".result")
    assert page.locator(".result").count() == 1
    page.fill("#aspects", "food, service")
    page.press("#text", "Enter")  # in the sentence too (Shift+Enter is a new line)
    page.wait_for_function("document.querySelectorAll('.result').length === 2")
    assert page.input_value("#text") == "the food was great but the service was awful"


def test_a_legend_explains_the_shading(page) -> None:  # type: ignore[no-untyped-def]
    assert not page.is_visible("#legend")  # nothing to explain yet
    page.fill("#text", "the food was great")
    page.fill("#aspects", "food")
    page.click("#analyse")
    page.wait_for_selector(".result")
    legend = page.locator("#legend")
    assert legend.is_visible()
    text = legend.inner_text().lower()
    assert "attention" in text and "aspect" in text and "vocabulary" in text
    assert legend.locator(".ramp").count() == 1


def test_repeated_aspects_are_told_apart_by_position(page) -> None:  # type: ignore[no-untyped-def]
    text = "the food was cold but the food of the day was great"
    page.fill("#text", text)
    page.fill("#aspects", "food")
    page.click("#analyse")
    page.wait_for_function("document.querySelectorAll('.result').length === 2")
    first, second = page.locator(".result h2").all_inner_texts()
    at = text.index("food", 5)
    assert "occurrence 1 of 2, characters 4–8" in first
    assert f"occurrence 2 of 2, characters {at}–{at + 4}" in second


def test_a_single_aspect_shows_no_occurrence_note(page) -> None:  # type: ignore[no-untyped-def]
    page.fill("#text", "the food was great")
    page.fill("#aspects", "food")
    page.click("#analyse")
    page.wait_for_selector(".result")
    assert page.locator(".result .occurrence").count() == 0


def test_out_of_vocabulary_words_are_marked(page, page_url: str) -> None:  # type: ignore[no-untyped-def]
    """A word the model's vocabulary lacks (the API flags it ``oov``) is marked in the
    heatmap, and only that word: end to end, no response rewritten."""
    page.fill("#text", "the zxqv food was great")
    page.fill("#aspects", "food")
    page.click("#analyse")
    page.wait_for_selector(".result")
    marked = page.locator(".result .heat").first.locator("span.oov")
    assert marked.all_inner_texts() == ["zxqv"]
    assert "vocabulary" in (marked.get_attribute("title") or "")


def test_truncated_text_is_flagged(page) -> None:  # type: ignore[no-untyped-def]
    page.fill("#text", "the food was great " + "a b " * 66)  # 136 words, under max_text_chars
    page.fill("#aspects", "food")
    page.click("#analyse")
    page.wait_for_selector(".result")
    assert page.locator(".result .truncated").count() == 1
    assert "128" in page.inner_text(".result .truncated")
    page.fill("#text", "the food was great")
    page.click("#analyse")
    page.wait_for_function("!document.querySelector('.result .truncated')")


def test_one_missing_aspect_does_not_hide_the_others(page) -> None:  # type: ignore[no-untyped-def]
    page.fill("#text", "the food was great")
    page.fill("#aspects", "food, pizza")
    page.click("#analyse")
    page.wait_for_selector(".result")
    page.wait_for_selector("#error:not([hidden])")
    assert page.locator(".result").count() == 1
    assert "'pizza' does not occur in the text" in page.inner_text("#error")


def test_the_page_has_a_favicon(page, page_url: str) -> None:  # type: ignore[no-untyped-def]
    href = page.get_attribute("link[rel=icon]", "href")
    assert href
    res = page.request.get(page_url + "/" + href)  # relative to the page at /
    assert res.status == 200 and res.headers["content-type"].startswith("image/")


@pytest.fixture(scope="module")
def auto_url(artifact: Path, extractor_artifact: Path):  # type: ignore[no-untyped-def]
    with serve(make_settings(artifact, extractor=extractor_artifact)) as url:
        yield url


@pytest.fixture()
def auto_page(auto_url: str):  # type: ignore[no-untyped-def]
    """The page of a service with an aspect extractor."""
    with _offline_page(auto_url) as pg:
        pg.goto(auto_url + "/")
        yield pg


def test_no_aspects_shows_the_aspects_found(auto_page) -> None:  # type: ignore[no-untyped-def]
    page = auto_page
    page.fill("#text", "the wine list was great but the food was awful")
    page.click("#analyse")
    page.wait_for_selector(".result")
    titles = page.locator(".result h2").all_inner_texts()
    assert ["wine list" in titles[0], "food" in titles[1]] == [True, True]
    badges = page.locator(".result .extracted").all_inner_texts()
    assert len(badges) == 2 and all("confidence" in b for b in badges)
    heat = page.locator(".result").first.locator(".heat").first
    assert heat.locator("span.aspect").all_inner_texts() == ["wine", "list"]
    assert "extractor absa-extractor:x1" in page.inner_text("#model")
    assert "empty: found in the text" in page.inner_text("label[for=aspects]")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "web-page-extracted.png"), full_page=True)


def test_no_aspects_found_is_said(auto_page) -> None:  # type: ignore[no-untyped-def]
    page = auto_page
    page.fill("#text", "we went there on friday")
    page.click("#analyse")
    page.wait_for_selector("#error:not([hidden])")
    assert "No aspects found" in page.inner_text("#error")


def test_no_aspects_without_an_extractor_says_why(page) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_function("!document.getElementById('model').textContent.includes('…')")
    assert "empty" not in page.inner_text("label[for=aspects]")
    page.fill("#text", "the food was great")
    page.click("#analyse")
    page.wait_for_selector("#error:not([hidden])")
    assert "no aspect extractor is configured" in page.inner_text("#error")


def _behind_prefix(pg, page_url: str, prefix: str) -> list[str]:  # type: ignore[no-untyped-def]
    """Route the page's requests as a proxy serving the app at ``prefix`` (and stripping it)
    would; the list fills with every URL asked of the proxy outside the prefix."""
    outside: list[str] = []

    def proxy(route) -> None:  # type: ignore[no-untyped-def]
        url = route.request.url
        if url.startswith(prefix + "/"):
            route.fulfill(response=route.fetch(url=page_url + url[len(prefix) :]))
        else:
            outside.append(url)
            route.fulfill(status=404, body="not this app")

    pg.route("**/*", proxy)
    return outside


def test_the_page_works_behind_a_proxy_that_serves_it_under_a_prefix(
    page_url: str,
) -> None:  # type: ignore[no-untyped-def]
    """A proxy serving the app at /absa/ (and stripping that): the page, its script, style
    and API calls all go through the prefix, and nothing is asked of the proxy's root, where
    another site would answer."""
    prefix = page_url + "/absa"
    with _offline_page(page_url) as pg:
        outside_prefix = _behind_prefix(pg, page_url, prefix)
        pg.goto(prefix + "/")
        pg.fill("#text", "the food was great but the service was awful")
        pg.fill("#aspects", "food, service")
        pg.click("#analyse")
        pg.wait_for_selector(".result")
        assert pg.locator(".result").count() == 2
        assert pg.locator("#model").inner_text() not in ("", "…")  # GET v1/model answered
        pg.goto(prefix + "/docs")
        pg.wait_for_selector(".opblock-summary-path", timeout=15_000)
        assert outside_prefix == []


def test_the_page_allows_only_its_own_resources(page_url: str) -> None:
    """The policy is sent, and the page still runs under it (chromium enforces it): a
    script the page did not load itself is refused."""
    with _offline_page(page_url, bypass_csp=False) as page:
        _runs_under_its_policy(page, page_url)


def _runs_under_its_policy(page, page_url: str) -> None:  # type: ignore[no-untyped-def]
    page.goto(page_url + "/")
    headers = page.request.get(page_url + "/").headers
    assert "default-src 'self'" in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff"
    page.fill("#text", "the food was great")
    page.fill("#aspects", "food")
    page.click("#analyse")
    page.wait_for_selector(".result")
    ran = page.evaluate(
        """() => new Promise((done) => {
            const s = document.createElement("script");
            s.textContent = "window.injected = true";
            document.body.appendChild(s);
            setTimeout(() => done(window.injected === true), 100);
        })"""
    )
    assert ran is False


def test_a_service_with_an_api_key_asks_for_it_and_then_answers(artifact: Path) -> None:
    """With ABSA_API_KEY the page's calls were 401s it could not get past: it now shows a
    key field (hidden otherwise), says why, and sends the key typed there."""
    key = "page-key-0123456789"
    with serve(make_settings(artifact, api_key=key)) as url, _offline_page(url) as page:
        page.goto(url + "/")
        page.wait_for_selector("#key-row:not([hidden])")
        assert page.inner_text("#model") == "needs an API key"
        page.fill("#text", "the food was great")
        page.fill("#aspects", "food")
        page.click("#analyse")
        page.wait_for_selector("#error:not([hidden])")
        assert "needs an API key" in page.inner_text("#error")
        page.fill("#api-key", "wrong-key")
        page.dispatch_event("#api-key", "change")
        page.click("#analyse")
        page.wait_for_function("document.getElementById('error').textContent.includes('refused')")
        page.fill("#api-key", "kéy✓")  # fetch cannot send it: "Could not reach the service"
        page.dispatch_event("#api-key", "change")
        assert "plain ASCII" in page.inner_text("#error")
        page.click("#analyse")
        page.wait_for_function("document.getElementById('error').textContent.includes('refused')")
        page.fill("#api-key", key)
        page.dispatch_event("#api-key", "change")
        page.click("#analyse")
        page.wait_for_selector(".result")
        assert "positive" in page.inner_text(".result h2")
        page.wait_for_function("/ v1$/.test(document.getElementById('model').textContent)")
        assert key not in page.url


def hold_first(held: list):  # type: ignore[no-untyped-def]
    """A route handler that holds the first request it sees (in ``held``, for the test to
    let go with ``fallback()``) and lets the others through."""

    def handle(route) -> None:  # type: ignore[no-untyped-def]
        if not held:
            held.append(route)
        else:
            route.fallback()

    return handle


def test_an_older_model_line_does_not_replace_a_newer_one(artifact: Path) -> None:
    """The key typed while the page's first GET v1/model (no key yet: a 401) was in flight:
    that 401, arriving last, set the footer back to "needs an API key" over the model the
    keyed call had named."""
    key = "page-key-0123456789"
    held: list = []
    with serve(make_settings(artifact, api_key=key)) as url, _offline_page(url) as page:
        page.route("**/v1/model", hold_first(held))
        page.goto(url + "/")
        page.wait_for_selector("#api-key", state="attached")
        page.evaluate(
            "k => { const f = document.getElementById('api-key'); f.value = k;"
            " f.dispatchEvent(new Event('change')); }",
            key,
        )
        page.wait_for_function("/ v1$/.test(document.getElementById('model').textContent)")
        assert held, "the first GET v1/model was not held"
        held[0].fallback()
        page.wait_for_timeout(1000)
        assert page.inner_text("#model").endswith(" v1"), page.inner_text("#model")


def test_without_an_api_key_the_key_field_stays_hidden(page) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_function("!document.getElementById('model').textContent.includes('…')")
    assert page.is_hidden("#key-row")


# --------------------------------------------------------------------------- page review


def test_a_model_line_error_is_not_shown_as_undefined(offline_page, page_url: str) -> None:  # type: ignore[no-untyped-def]
    """GET v1/model answering an error (503 while the model loads): the footer said
    "undefined undefined" and the aspects label lost its "found in the text"."""
    offline_page.route(
        "**/v1/model",
        lambda route: route.fulfill(
            status=503,
            headers={"Retry-After": "1"},
            json={"detail": "not ready: the model is loading or warming up"},
        ),
    )
    offline_page.goto(page_url + "/")
    offline_page.wait_for_function("!document.getElementById('model').textContent.includes('…')")
    assert "undefined" not in offline_page.inner_text("#model")
    assert offline_page.inner_text("#model") == "unavailable"


def test_an_overloaded_service_says_when_to_try_again(page) -> None:  # type: ignore[no-untyped-def]
    """A 503 with Retry-After: its detail and when to retry, said once (not once per
    aspect, each of which is a request of its own)."""
    page.route(
        "**/v1/predict",
        lambda route: route.fulfill(
            status=503,
            headers={"Retry-After": "3"},
            json={"detail": "overloaded: 4 requests in flight"},
        ),
    )
    page.fill("#text", "the food was great but the service was awful")
    page.fill("#aspects", "food, service")
    page.click("#analyse")
    page.wait_for_selector("#error:not([hidden])")
    error = page.inner_text("#error")
    assert error.count("overloaded: 4 requests in flight") == 1
    assert "try again in 3 s" in error


def test_an_answer_that_is_not_json_is_not_called_unreachable(page) -> None:  # type: ignore[no-untyped-def]
    """A 200 that is not the API's JSON (a proxy's login page): the service was reached."""
    page.route(
        "**/v1/predict",
        lambda route: route.fulfill(status=200, content_type="text/html", body="<p>sign in</p>"),
    )
    page.fill("#text", "the food was great")
    page.fill("#aspects", "food")
    page.click("#analyse")
    page.wait_for_selector("#error:not([hidden])")
    error = page.inner_text("#error")
    assert "Could not reach" not in error and "null" not in error
    assert "not the service's JSON" in error


def test_truncated_text_in_another_script_is_flagged(page) -> None:  # type: ignore[no-untyped-def]
    """The words cut off are Cyrillic: JavaScript's \\w (ASCII) missed them, the API's (the
    tokenizer's Python \\w) does not."""
    page.fill("#text", "еда была отличной " + "а б " * 66)
    page.fill("#aspects", "еда")
    page.click("#analyse")
    page.wait_for_selector(".result")
    assert page.locator(".result .truncated").count() == 1


def test_the_same_span_asked_twice_is_one_card(page) -> None:  # type: ignore[no-untyped-def]
    """Typed "food" (both occurrences) and the second one also selected: two cards, not a
    third that repeats the second; and occurrences are numbered by position, whatever
    order they were asked in."""
    text = "the food was cold but the food of the day was great"
    page.fill("#text", text)
    at = text.index("food", 5)
    for start in (at, 4):  # the second occurrence picked first
        page.evaluate(
            f"() => document.getElementById('text').setSelectionRange({start}, {start + 4})"
        )
        page.click("#add-selection")
    page.click("#analyse")
    page.wait_for_function("document.querySelectorAll('.result').length === 2")
    titles = page.locator(".result h2").all_inner_texts()
    assert any("occurrence 1 of 2, characters 4–8" in t for t in titles), titles
    assert any(f"occurrence 2 of 2, characters {at}–{at + 4}" in t for t in titles), titles
    page.fill("#aspects", "food")  # the typed word again names both
    page.evaluate(f"() => document.getElementById('text').setSelectionRange({at}, {at + 4})")
    page.click("#add-selection")
    page.click("#analyse")
    page.wait_for_timeout(1500)
    assert page.locator(".result").count() == 2


def test_an_older_answer_does_not_replace_a_newer_one(page) -> None:  # type: ignore[no-untyped-def]
    """Enter pressed twice with an edit between: the first answer, arriving last, replaced
    the second's cards (and re-enabled the button while the second was in flight)."""
    held: list = []
    page.route("**/v1/predict", hold_first(held))
    page.fill("#text", "the food was great")
    page.fill("#aspects", "food")
    page.press("#aspects", "Enter")
    page.wait_for_function(
        "document.getElementById('analyse').getAttribute('aria-disabled') === 'true'"
    )
    page.fill("#text", "the service was awful")
    page.fill("#aspects", "service")
    page.press("#aspects", "Enter")
    page.wait_for_selector(".result")
    assert "service" in page.inner_text(".result h2")
    held[0].fallback()
    page.wait_for_timeout(1000)
    titles = page.locator(".result h2").all_inner_texts()
    assert len(titles) == 1 and "service" in titles[0], titles


def test_a_picked_aspect_can_be_removed_by_its_name(page) -> None:  # type: ignore[no-untyped-def]
    """The chip's remove button was named "×" to a screen reader; the chips' group name
    was on a div without a role, where it is not read."""
    text = "the pizza was okay but the staff was great"
    page.fill("#text", text)
    start = text.index("staff")
    page.evaluate(f"() => document.getElementById('text').setSelectionRange({start}, {start + 5})")
    page.click("#add-selection")
    assert page.get_by_role("group", name="aspects picked from the text").count() == 1
    page.get_by_role("button", name="remove staff").click()
    assert page.inner_text("#chips") == ""


def test_the_heatmap_says_its_strongest_words_in_text(page) -> None:  # type: ignore[no-untyped-def]
    """Shading (and a mouse-only title) was the only way to read the attention: a screen
    reader, or a reader who cannot tell the shades apart, got nothing of it."""
    page.fill("#text", "the food was great but the service was awful")
    page.fill("#aspects", "food")
    page.click("#analyse")
    page.wait_for_selector(".result")
    card = page.locator(".result").first
    words = card.locator(".heat").first.locator("span.w")
    weights = [float(w) for w in words.evaluate_all("els => els.map(e => e.dataset.weight)")]
    strongest = words.nth(weights.index(max(weights))).inner_text()
    summary = card.locator(".top").first.inner_text()
    assert summary.lower().startswith("most attention: ")
    first = summary.split(": ", 1)[1].split(" · ")[0]  # the strongest word, and its share
    assert first.startswith(strongest + " ") and first.endswith("%")
    assert abs(float(first[len(strongest) + 1 : -1]) - max(weights) * 100) <= 0.5 + 1e-9


def test_docs_try_it_out_goes_through_the_prefix(page_url: str) -> None:
    """/docs under a prefix: its "Try it out" sent the request to the proxy's root
    (the schema names no server, which Swagger UI reads as the host's root)."""
    prefix = page_url + "/absa"
    with _offline_page(page_url) as pg:
        outside_prefix = _behind_prefix(pg, page_url, prefix)
        pg.goto(prefix + "/docs")
        pg.click("#operations-predict-predict_v1_predict_post .opblock-summary", timeout=15_000)
        pg.click("button.try-out__btn")
        pg.fill(".body-param__text", '{"text": "the food was great", "aspects": ["food"]}')
        pg.click("button.execute")
        pg.wait_for_selector(".live-responses-table tr.response .response-col_status")
        assert outside_prefix == []
        status = pg.inner_text(".live-responses-table tr.response .response-col_status")
        assert status.strip() == "200"


@pytest.mark.parametrize(
    "operation", ["predict-predict_v1_predict_post", "predict-predict_batch_v1_predict_batch_post"]
)
def test_docs_try_it_out_with_its_own_body_is_answered(page_url: str, operation: str) -> None:
    """Swagger UI's body as it fills it in: it added "categories": ["string"] beside the
    aspects, which the service refuses (aspects or categories, not both)."""
    with _offline_page(page_url) as pg:
        pg.goto(page_url + "/docs")
        pg.click(f"#operations-{operation} .opblock-summary", timeout=15_000)
        pg.click("button.try-out__btn")
        body = pg.input_value(".body-param__text")
        pg.click("button.execute")
        pg.wait_for_selector(".live-responses-table tr.response .response-col_status")
        status = pg.inner_text(".live-responses-table tr.response .response-col_status")
        assert status.strip() == "200", body
