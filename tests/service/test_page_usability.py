"""The web page as a keyboard-only user, a screen-reader user, a phone user and a reader of
other scripts meet it: each test is a trip found in a review of the page (see
test_browser.py for how the page is served and driven)."""

# ruff: noqa: F811 (the fixtures imported below are the tests' parameters)
from __future__ import annotations

import pytest

# the page's fixtures: a served page without an extractor (page) and with one (auto_page)
from tests.service.test_browser import (  # noqa: F401
    ARTIFACTS,
    auto_page,
    auto_url,
    offline_page,
    page,
    page_url,
)

MODEL_LOADED = "!document.getElementById('model').textContent.includes('…')"


def _counting_hold(seen: list, held: list):  # type: ignore[no-untyped-def]
    """A route handler that counts every request (in ``seen``) and holds the first (in
    ``held``, for the test to let go with ``fallback()``)."""

    def handle(route) -> None:  # type: ignore[no-untyped-def]
        seen.append(route.request.post_data)
        if not held:
            held.append(route)
        else:
            route.fallback()

    return handle


def test_the_analyse_button_keeps_the_keyboard_focus(page) -> None:  # type: ignore[no-untyped-def]
    """Enter on the focused Analyse button disabled it, and a disabled button drops the
    focus (to the page's body): Enter again did nothing, and a screen reader lost its place."""
    seen: list = []
    held: list = []
    page.route("**/v1/predict", _counting_hold(seen, held))
    page.fill("#text", "the food was great")
    page.fill("#aspects", "food")
    page.focus("#analyse")
    page.keyboard.press("Enter")
    page.wait_for_function("document.getElementById('status').textContent.includes('Analysing')")
    assert page.evaluate("document.activeElement.id") == "analyse"
    held[0].fallback()
    page.wait_for_selector(".result")
    assert page.evaluate("document.activeElement.id") == "analyse"
    page.keyboard.press("Enter")  # again, from the keyboard: asked again
    for _ in range(50):
        if len(seen) == 2:
            break
        page.wait_for_timeout(100)
    assert len(seen) == 2


def test_enter_again_while_the_same_analysis_runs_sends_nothing_more(page) -> None:  # type: ignore[no-untyped-def]
    """Enter pressed again (impatience, a key that repeats) with nothing changed sent the
    whole analysis again, one request per aspect each time."""
    seen: list = []
    held: list = []
    page.route("**/v1/predict", _counting_hold(seen, held))
    page.fill("#text", "the food was great")
    page.fill("#aspects", "food")
    for _ in range(3):
        page.press("#aspects", "Enter")
    page.click("#analyse", force=True)  # a click on the busy button (Playwright waits else)
    page.wait_for_timeout(500)
    assert len(seen) == 1, seen
    held[0].fallback()
    page.wait_for_selector(".result")
    assert page.locator(".result").count() == 1


def test_a_service_that_cannot_be_reached_leaves_no_stale_results(page) -> None:  # type: ignore[no-untyped-def]
    """The network down (or the server stopped): the error sat above the cards of the
    previous sentence, which read as the answer for the new one."""
    page.fill("#text", "the food was great")
    page.fill("#aspects", "food")
    page.click("#analyse")
    page.wait_for_selector(".result")
    page.route("**/v1/predict", lambda route: route.abort("connectionrefused"))
    page.fill("#text", "the service was awful")
    page.fill("#aspects", "service")
    page.click("#analyse")
    page.wait_for_selector("#error:not([hidden])")
    error = page.inner_text("#error")
    assert "Could not reach the service" in error and "running" in error, error
    assert page.locator(".result").count() == 0
    assert page.is_hidden("#legend")


def test_a_phone_wide_page_does_not_scroll_sideways(page) -> None:  # type: ignore[no-untyped-def]
    """At 375 px a long unbroken word (a URL) in the heatmap pushed the page to 1400 px, and
    the aspects box was squeezed beside its button to a third of the width (its hint cut)."""
    page.set_viewport_size({"width": 375, "height": 700})
    width = page.evaluate("document.getElementById('text').getBoundingClientRect().width")
    box = page.evaluate("document.getElementById('aspects').getBoundingClientRect().width")
    assert box >= 0.9 * width, (box, width)
    page.fill("#text", "the food was great https://example.com/" + "a" * 150)
    page.fill("#aspects", "food, " + "b" * 60)
    page.click("#analyse")
    page.wait_for_selector(".result")
    page.wait_for_selector("#error:not([hidden])")
    scroll = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert scroll[0] <= scroll[1], scroll


HEBREW = "האוכל היה מצוין, אבל השירות היה איטי."


def test_right_to_left_text_reads_right_to_left(page) -> None:  # type: ignore[no-untyped-def]
    """Hebrew in the sentence box, the heatmap, the picked aspect's chip and the "most
    attention" line was laid out left to right: the full stop at the wrong end, the chip's
    [start:end] and the percentages reordered around the words."""
    page.fill("#text", HEBREW)
    at = HEBREW.index("השירות")
    page.evaluate(f"() => document.getElementById('text').setSelectionRange({at}, {at + 6})")
    page.click("#add-selection")
    page.click("#analyse")
    page.wait_for_selector(".result")
    assert page.evaluate("document.getElementById('text').matches(':dir(rtl)')")
    page.fill("#aspects", "השירות")
    assert page.evaluate("document.getElementById('aspects').matches(':dir(rtl)')")
    heats = page.locator(".result .heat")
    assert heats.count() == 3
    assert all(heats.evaluate_all("hs => hs.map(h => h.matches(':dir(rtl)'))"))
    # a word of another direction inside an English line is isolated, so the line's order
    # stays: the chip's term, then its span; the line's words in their order, left to right
    chip = page.locator(".chip bdi")
    assert chip.inner_text() == "השירות"
    items = page.locator(".result .top").first.locator(":scope > bdi")  # not the unknown
    assert items.count() == 3
    xs = items.evaluate_all("bs => bs.map(b => b.getBoundingClientRect().left)")
    assert xs == sorted(xs), xs
    assert page.locator(".result h2 bdi").first.inner_text() == "השירות"


def test_an_emoji_of_several_code_points_stays_whole_in_the_heatmap(page) -> None:  # type: ignore[no-untyped-def]
    """The tokenizer makes each code point of 👩‍👩‍👧 (joined by U+200D), of a flag (two
    regional indicators) and of a skin tone its own token: a shaded span each, which drew
    three people for one family, two letters for a flag, a thumb and a colour swatch."""
    text = "the food 👩\u200d👩\u200d👧 was great 🇫🇷 👍🏽"
    page.fill("#text", text)
    page.fill("#aspects", "food")
    page.click("#analyse")
    page.wait_for_selector(".result")
    split = page.evaluate(
        """() => [...document.querySelectorAll('.result .heat')].map((heat) => {
            // every edge between the heatmap's pieces must be an edge between characters
            const seg = new Intl.Segmenter(undefined, {granularity: 'grapheme'});
            const edges = new Set([0]);
            let n = 0;
            for (const s of seg.segment(heat.textContent)) { n += s.segment.length; edges.add(n); }
            const bad = [];
            let at = 0;
            for (const node of heat.childNodes) {
                at += node.textContent.length;
                if (!edges.has(at)) bad.push(at);
            }
            return bad;
        })"""
    )
    assert split == [[], [], []], split
    assert page.evaluate("document.querySelector('.result .heat').textContent") == text
    weights = (
        page.locator(".result .heat")
        .first.locator("span.w")
        .evaluate_all("els => els.map(e => Number(e.dataset.weight))")
    )
    assert abs(sum(weights) - 1.0) < 1e-3  # a character's pieces' weights add up


def test_without_an_extractor_the_page_does_not_offer_what_it_cannot_do(page) -> None:  # type: ignore[no-untyped-def]
    """No extractor: the aspects label changed, but the lead still said "or leave them out
    to have them found", and the "aspects found" example was a button that only errs."""
    page.wait_for_function(MODEL_LOADED)
    assert page.locator("button.example", has_text="aspects found").is_hidden()
    assert "leave them out" not in page.inner_text(".lead")
    assert page.locator("button.example:visible").count() == 4


def test_with_an_extractor_the_page_offers_finding_aspects(auto_page) -> None:  # type: ignore[no-untyped-def]
    auto_page.wait_for_function(MODEL_LOADED)
    assert auto_page.locator("button.example", has_text="aspects found").is_visible()
    assert "leave them out" in auto_page.inner_text(".lead")


def test_the_answer_is_announced_in_a_sentence(page) -> None:  # type: ignore[no-untyped-def]
    """The results were a polite live region: a screen reader read every card whole, the
    sentence three times in each (the heatmap, and one row per head). The status line now
    says the labels; the cards are there to be read by heading."""
    page.fill("#text", "the food was great but the service was awful")
    page.fill("#aspects", "food, service")
    page.click("#analyse")
    page.wait_for_function("document.querySelectorAll('.result').length === 2")
    status = page.inner_text("#status")
    assert "“food” positive" in status and "“service” negative" in status, status
    assert page.get_attribute("#results", "aria-live") is None
    assert page.get_attribute("#status", "role") == "status"


def test_each_heatmap_row_says_its_strongest_words(page) -> None:  # type: ignore[no-untyped-def]
    """The self-attention heads' rows were shading only: no words said what they showed."""
    page.fill("#text", "the food was great but the service was awful")
    page.fill("#aspects", "food")
    page.click("#analyse")
    page.wait_for_selector(".result")
    card = page.locator(".result").first
    assert card.locator(".top").count() == card.locator(".heat").count() == 3
    for heat, top in zip(
        card.locator(".heat").all(), card.locator(".top").all_inner_texts(), strict=True
    ):
        words = heat.locator("span.w")
        weights = [float(w) for w in words.evaluate_all("es => es.map(e => e.dataset.weight)")]
        strongest = words.nth(weights.index(max(weights))).inner_text()
        assert top.lower().startswith("most attention: " + strongest + " "), top


def test_the_legend_is_named_to_a_screen_reader(page) -> None:  # type: ignore[no-untyped-def]
    """Its aria-label was on a div without a role, where it is not read."""
    page.fill("#text", "the food was great")
    page.fill("#aspects", "food")
    page.click("#analyse")
    page.wait_for_selector(".result")
    assert page.get_by_role("group", name="how to read the shading").is_visible()


def test_an_aspect_over_the_length_limit_is_said_in_words(page) -> None:  # type: ignore[no-untyped-def]
    """A 422 of the schema read "invalid request: body.aspects.0: String should have at
    most 200 characters": the request's field path, and not which aspect."""
    long = "x" * 201
    page.fill("#text", "the food was great " + long)
    page.fill("#aspects", f"food, {long}")
    page.click("#analyse")
    page.wait_for_selector("#error:not([hidden])")
    error = page.inner_text("#error")
    assert "body." not in error and "aspects.0" not in error, error
    assert "at most 200 characters" in error and "xxxxxxxx" in error, error
    assert page.locator(".result").count() == 1


def test_an_aspect_not_in_the_text_is_not_called_aspects_0(page) -> None:  # type: ignore[no-untyped-def]
    """The page asks for each aspect alone: every such error read "aspects[0]: ...", the
    index in a request the user never saw, whichever aspect it was."""
    page.fill("#text", "the food was great")
    page.fill("#aspects", "food, pizza, pasta")
    page.click("#analyse")
    page.wait_for_selector("#error:not([hidden])")
    lines = page.inner_text("#error").splitlines()
    assert lines == [
        "aspect 'pizza' does not occur in the text",
        "aspect 'pasta' does not occur in the text",
    ], lines


def test_a_service_that_never_answers_is_given_up_on(page) -> None:  # type: ignore[no-untyped-def]
    """A server or proxy that takes the request and never answers kept the page at
    "Analysing…", its button disabled, for ever: the page gives up after a minute, says so,
    and can be asked again."""
    seen: list = []
    held: list = []
    page.clock.install()  # the page's timers, run forward below instead of waited for
    page.route("**/v1/predict", _counting_hold(seen, held))
    page.fill("#text", "the food was great")
    page.fill("#aspects", "food")
    page.click("#analyse")
    page.wait_for_function("document.getElementById('status').textContent.includes('Analysing')")
    page.clock.run_for(59_000)
    assert page.is_hidden("#error") and page.is_disabled("#analyse")
    page.clock.run_for(2_000)
    page.wait_for_selector("#error:not([hidden])")
    error = page.inner_text("#error")
    assert "did not answer in 60 s" in error and "try again" in error, error
    assert not page.is_disabled("#analyse") and page.locator(".result").count() == 0
    page.click("#analyse")  # asked again: this one is let through
    page.wait_for_selector(".result")
    assert len(seen) == 2 and page.is_hidden("#error")


def test_a_new_analysis_cancels_the_one_it_replaces(page) -> None:  # type: ignore[no-untyped-def]
    """Enter on a new sentence while the last one's requests were out: their answers were
    dropped on arrival, but the requests ran on, each holding a slot of the server."""
    seen: list = []
    held: list = []
    failed: list = []
    page.on("requestfailed", lambda request: failed.append(request.post_data))
    page.route("**/v1/predict", _counting_hold(seen, held))
    page.fill("#text", "the food was great")
    page.fill("#aspects", "food")
    page.press("#aspects", "Enter")
    page.wait_for_function("document.getElementById('status').textContent.includes('Analysing')")
    page.fill("#text", "the service was awful")
    page.fill("#aspects", "service")
    page.press("#aspects", "Enter")
    page.wait_for_selector(".result")
    for _ in range(50):
        if failed:
            break
        page.wait_for_timeout(100)
    assert len(failed) == 1 and "food was great" in failed[0], failed
    assert "service" in page.inner_text(".result h2") and len(seen) == 2


def test_an_aspect_named_like_an_objects_own_key_gets_its_card(page) -> None:  # type: ignore[no-untyped-def]
    """ "constructor" (a real English word) is a key of every plain object: the page's lookup
    of a term's occurrences threw, and said the service could not be reached."""
    page.fill("#text", "The constructor of the house was great, the __proto__ too")
    page.fill("#aspects", "constructor, __proto__")
    page.click("#analyse")
    page.wait_for_selector(".result")
    assert page.locator(".result").count() == 2
    assert page.locator("#error").is_hidden()


def test_a_browser_that_blocks_site_data_still_gets_a_working_page(
    offline_page, page_url: str
) -> None:  # type: ignore[no-untyped-def]
    """Site data blocked, sessionStorage throws on any use: the page's first line threw, the
    model was never shown and Analyse did nothing, without a word."""
    offline_page.add_init_script(
        "Object.defineProperty(window, 'sessionStorage', {get() {"
        " throw new DOMException('Access is denied for this document.', 'SecurityError'); }});"
    )
    offline_page.goto(page_url + "/")
    offline_page.wait_for_function(MODEL_LOADED)
    offline_page.fill("#text", "the food was great")
    offline_page.fill("#aspects", "food")
    offline_page.click("#analyse")
    offline_page.wait_for_selector(".result")


def test_a_selected_aspect_over_the_length_limit_is_told_its_own_error(page) -> None:  # type: ignore[no-untyped-def]
    """A selected (pinned) aspect of 221 characters read "Input should be a valid string":
    the error of the union's other member, listed first, not its own."""
    text = "the service was " + "x" * 210
    page.fill("#text", text)
    page.evaluate(
        "([term, start, end]) => { picked.push({term, start, end}); renderChips(); }",
        [text[16:], 16, len(text)],
    )
    page.click("#analyse")
    page.wait_for_selector("#error:not([hidden])")
    error = page.inner_text("#error")
    assert "at most 200 characters" in error and "valid string" not in error, error


def _invalid(page, field: str) -> list:  # type: ignore[no-untyped-def]
    return page.evaluate(
        "id => [document.getElementById(id).getAttribute('aria-invalid'),"
        " document.getElementById(id).getAttribute('aria-describedby')]",
        field,
    )


def test_an_error_is_tied_to_its_field_and_brought_into_view(page) -> None:  # type: ignore[no-untyped-def]
    """Review (accessibility): an error was announced once but tied to no field (moving back
    into it, a screen reader said nothing of it), and at 320 px or 200 % zoom it began below
    the screen, after the examples: a keyboard user pressed Enter and saw nothing happen."""
    page.set_viewport_size({"width": 320, "height": 560})
    page.wait_for_function(MODEL_LOADED)
    page.focus("#text")
    page.keyboard.press("Enter")
    page.wait_for_selector("#error:not([hidden])")
    assert _invalid(page, "text") == ["true", "error"]
    assert _invalid(page, "aspects") == [None, None]
    box = page.evaluate(
        "JSON.parse(JSON.stringify(document.getElementById('error').getBoundingClientRect()))"
    )
    assert 0 <= box["top"] and box["bottom"] <= 560, box
    page.fill("#text", "the food was great")
    page.fill("#aspects", "pizza")
    page.click("#analyse")
    page.wait_for_function("document.getElementById('error').textContent.includes('pizza')")
    assert _invalid(page, "aspects") == ["true", "error"]
    assert _invalid(page, "text") == [None, None]
    page.fill("#aspects", "food")
    page.click("#analyse")
    page.wait_for_selector(".result")
    assert page.is_hidden("#error")
    assert _invalid(page, "aspects") == _invalid(page, "text") == [None, None]


def test_the_strongest_words_said_are_words_and_unknown_ones_are_named(page) -> None:  # type: ignore[no-untyped-def]
    """Review (accessibility): "Most attention: though 52% · friendly 28% · , 10%": read
    aloud, the comma is silent and its share had no word. And a word not in the model's
    vocabulary was marked by an underline alone."""
    said = page.evaluate(
        """() => strongest("friendly, though it rained", [
            {start: 0, end: 8, weight: 0.28}, {start: 8, end: 9, weight: 0.3},
            {start: 10, end: 16, weight: 0.32, oov: true}, {start: 17, end: 19, weight: 0.02},
            {start: 20, end: 26, weight: 0.08, oov: true}]).textContent"""
    )
    assert said == (
        "Most attention: though 32% · friendly 28% · rained 8%; "
        "not in the model's vocabulary: though, rained"
    ), said
    # an emoji is a word to the model (its strongest, here), not punctuation
    said = page.evaluate(
        r"""() => strongest("food \u{1F60D} !", [
            {start: 0, end: 4, weight: 0.3}, {start: 5, end: 6, weight: 0.6, oov: true},
            {start: 7, end: 8, weight: 0.1}]).textContent"""
    )
    face = "\U0001f60d"
    assert said == f"Most attention: {face} 60% · food 30%; not in the model's vocabulary: {face}"
    # as the page says it of an answer: the test's model knows few words
    page.fill("#text", "The staff was friendly, though the wait was long.")
    page.fill("#aspects", "staff")
    page.click("#analyse")
    page.wait_for_selector(".result")
    marked = page.locator(".result .heat").first.locator("span.w.oov").all_inner_texts()
    unknown = [w for w in marked if any(c.isalnum() for c in w)]  # "," is unknown too
    top = page.locator(".result .top").first.inner_text()
    assert unknown and top.endswith("; not in the model's vocabulary: " + ", ".join(unknown)), top


def _luminance(rgb: str) -> float:
    def channel(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = (int(x) for x in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")[:3])
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def test_the_fields_edges_and_the_chips_buttons_can_be_seen_and_hit(page) -> None:  # type: ignore[no-untyped-def]
    """Review (accessibility): the fields' only edge, a #bbb border on white beside a #fafafa
    page, had a contrast of 1.84:1 (WCAG 1.4.11 asks 3:1); a chip's remove button was a
    17 x 22 px target (2.5.8 asks 24 x 24)."""
    colours = page.evaluate(
        "['text', 'aspects'].map(id => getComputedStyle(document.getElementById(id)))"
        ".map(s => [s.borderTopColor, s.backgroundColor])"
        ".concat([[getComputedStyle(document.body).backgroundColor, '']])"
    )
    body = _luminance(colours[-1][0])
    for border, inside in colours[:-1]:
        edge = _luminance(border)
        for against in (body, _luminance(inside)):
            ratio = (max(edge, against) + 0.05) / (min(edge, against) + 0.05)
            assert ratio >= 3, (border, ratio)
    page.fill("#text", "the food was great")
    page.evaluate("() => { picked.push({term: 'food', start: 4, end: 8}); renderChips(); }")
    size = page.evaluate(
        "JSON.parse(JSON.stringify(document.querySelector('.chip button').getBoundingClientRect()))"
    )
    assert size["width"] >= 24 and size["height"] >= 24, size


# [colour, the background under it] of each element a selector finds: the backgrounds of its
# ancestors laid over each other from the page up (rgba shades over a card over the page)
_INK_AND_GROUND = """(selectors) => {
  const rgba = (s) => {
    const v = s.match(/[\\d.]+/g).map(Number);
    return v.length > 3 ? v : [...v, 1];
  };
  const over = (top, under) => [0, 1, 2].map((i) => top[3] * top[i] + (1 - top[3]) * under[i]);
  const ground = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) layers.push(rgba(getComputedStyle(e).backgroundColor));
    layers.push(rgba(getComputedStyle(document.documentElement).backgroundColor));
    let out = [255, 255, 255];  // the canvas under a transparent page
    for (const l of layers.reverse()) out = over(l, out);
    return out;
  };
  return selectors.flatMap((sel) => [...document.querySelectorAll(sel)].map((el) => [
    sel, el.textContent.slice(0, 30), rgba(getComputedStyle(el).color).slice(0, 3), ground(el),
    rgba(getComputedStyle(el).borderTopColor).slice(0, 3)]));
}"""


def _lum(rgb: list[float]) -> float:
    return _luminance("rgb({})".format(", ".join(str(round(c)) for c in rgb)))


def _contrast(a: list[float], b: list[float]) -> float:
    x, y = _lum(a), _lum(b)
    return (max(x, y) + 0.05) / (min(x, y) + 0.05)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_text_reads_in_the_light_and_the_dark_scheme(page, scheme: str) -> None:  # type: ignore[no-untyped-def]
    """Review: the page had one colour scheme, a white page in front of a reader whose system
    is dark. It follows the system's now; in each scheme every text reads against what is
    under it (4.5:1, WCAG 1.4.3), a heatmap word at every strength of its shade too (the
    dark page's light text was lost on a strong orange), and the fields' edges and the
    probability bars against theirs (3:1, 1.4.11)."""
    page.emulate_media(color_scheme=scheme)
    page.fill("#text", "the food was great but the service was awful")
    page.fill("#aspects", "food, service")
    page.click("#analyse")
    page.wait_for_selector(".result")
    body = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert (_luminance(body) < 0.02) is (scheme == "dark"), body
    texts = ["h1", ".lead", "label", "#examples", "button", ".result h2", ".bars span",
             ".heat", ".heat span.w", ".head", ".top", "footer", ".label"]  # fmt: skip
    found = page.evaluate(_INK_AND_GROUND, texts)
    assert {sel for sel, *_ in found} >= {".heat span.w", ".result h2", ".label", "footer"}
    shaded = [level for level in page.eval_on_selector_all(
        ".heat span.w", "els => els.map(e => Number(e.dataset.level))")]  # fmt: skip
    assert min(shaded) < 0.3 and max(shaded) == 1  # weak and strong shades both met
    for sel, text, ink, ground, _ in found:
        assert _contrast(ink, ground) >= 4.5, (scheme, sel, text, ink, ground)
    # a field's edge against its inside and the page; a bar against its card
    (_, _, _, page_ground, _), (_, _, _, card, _) = page.evaluate(
        _INK_AND_GROUND, ["main", ".bars"]
    )[:2]
    for sel, _, _, inside, edge in page.evaluate(_INK_AND_GROUND, ["#text", "#aspects"]):
        for ground in (inside, page_ground):
            assert _contrast(edge, ground) >= 3, (scheme, sel, edge, ground)
    bar = page.evaluate("getComputedStyle(document.querySelector('.bar')).backgroundColor")
    rgb = [float(x) for x in bar[bar.index("(") + 1 : bar.index(")")].split(",")[:3]]
    assert _contrast(rgb, card) >= 3, (scheme, rgb, card)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"web-page-{scheme}.png"), full_page=True)
