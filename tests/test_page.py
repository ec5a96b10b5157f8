"""The service's page and auto's report in a real browser: Debian's Chromium, headless, driven by
Selenium. The page is loaded from `adaptext serve` on a loopback port; a question typed and sent
must show the label, a bar per class and the words coloured as the service answered them, and a
refused input the service's message. Each test leaves a screenshot in its temporary folder;
ADAPTEXT_PAGE_SCREENSHOT=PATH writes the page's there too (docs/page.png is one)."""
from __future__ import annotations

import csv
import json
import os
import re
import shutil
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from conftest import bundled_examples, serving

from adaptext.explain.highlight import colour
from adaptext.serve import MAX_CHARS
from adaptext.training.run import train_run

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("captum")                       # the page's words are attributed by /explain
webdriver = pytest.importorskip("selenium.webdriver", reason="the browser tests drive Chromium with Selenium: "
                                "pip install selenium (in the dev extra)")
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.chrome.service import Service       # noqa: E402
from selenium.webdriver.common.by import By                 # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

APT = "apt-get install chromium chromium-driver"
LEGACY = Path(__file__).resolve().parent / "data" / "legacy_runs"
QUESTION = "Who wrote Hamlet ?"


@pytest.fixture(scope="module")
def browser():
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        pytest.skip(f"no Chromium to drive: {APT} (Debian's packages)")
    options = webdriver.ChromeOptions()
    # no sandbox: CI runs as root, where Chromium's sandbox will not start
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--hide-scrollbars",
                 "--window-size=1000,900"):
        options.add_argument(flag)
    options.binary_location = chromium            # both paths given: Selenium looks for nothing online
    b = webdriver.Chrome(options=options, service=Service(driver))
    try:
        yield b
    finally:
        b.quit()


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """`adaptext serve` on a small demo run (kim_cnn, 2 epochs on the bundled TREC questions)."""
    run = tmp_path_factory.mktemp("runs") / "trec-demo-kim_cnn"
    train_run({"out": str(run), "epochs": 2, "seed": 1, "progress": False, "filters": 20, "threads": 1})
    with serving(run, "--threads", "1") as (url, _):
        yield url, run


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    """`adaptext serve` on a pair run (attconv, 1 epoch on neighbouring TREC questions)."""
    folder = tmp_path_factory.mktemp("pairs")
    data = folder / "pairs.csv"
    with open(data, "w", newline="") as f:
        csv.writer(f).writerows([("text", "pair", "label")] + [(e.text, e.pair, e.label)
                                                               for e in bundled_examples("pair", 120)])
    train_run({"out": str(folder / "pairs-attconv"), "model": "attconv", "data": str(data), "test": str(data),
               "cv": 0, "epochs": 1, "progress": False, "pair_col": "pair", "threads": 1})
    with serving(folder / "pairs-attconv", "--threads", "1") as (url, _):
        yield url


def call(url: str, body: dict | None = None) -> tuple[int, dict]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data, {"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def wait(browser, found, seconds: float = 60):
    """What ``found(browser)`` returns once it is true; the page may replace what it read meanwhile."""
    return WebDriverWait(browser, seconds, ignored_exceptions=(StaleElementReferenceException,)).until(found)


def open_page(browser, url: str) -> dict:
    """The page of the service at ``url``, once it shows /info's answer; that answer."""
    info = call(url + "/info")[1]
    browser.get(url + "/")
    wait(browser, lambda b: b.find_element(By.ID, "run").text == info["run"])
    return info


def ask(browser, text: str, pair: str | None = None) -> None:
    """Types an input, sends it and waits for its words or its error."""
    for box, value in (("text", text), ("pair", pair)):
        if value is not None:
            browser.find_element(By.ID, box).clear()
            browser.find_element(By.ID, box).send_keys(value)
    browser.find_element(By.ID, "predict").click()
    wait(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "#words .word") or b.find_element(By.ID, "error").text)


def shown_words(browser) -> list[tuple[str, float]]:
    return [(w.text, float(w.get_attribute("title"))) for w in browser.find_elements(By.CSS_SELECTOR, "#words .word")]


def words_toward(browser, url: str, inputs: list, label: str) -> list[tuple[str, float]]:
    """Waits until the page shows the words of /explain's answer toward ``label``; that answer."""
    record = call(url + "/explain", {"inputs": inputs, "label": label})[1]["explanations"][0]
    want = [(t, v) for seg in record["segments"] for t, v in zip(seg["tokens"], seg["scores"])]
    wait(browser, lambda b: len(shown_words(b)) == len(want) and all(
        t == u and abs(v - w) < 2e-4 for (t, v), (u, w) in zip(shown_words(b), want)))
    return want


def rgba(css: str) -> list[float]:
    """An rgb() / rgba() colour as [r, g, b, a]."""
    values = [float(v) for v in re.findall(r"[\d.]+", css)]
    return values + [1.0] * (4 - len(values))


def screenshot(browser, path: Path) -> None:
    """The page's content, however tall: the window is fitted to it for the picture."""
    width, height = browser.get_window_size()["width"], browser.get_window_size()["height"]
    content, inside = browser.execute_script(
        "return [Math.ceil(document.body.getBoundingClientRect().bottom) + 32, window.innerHeight]")
    browser.set_window_size(width, height - inside + content)
    try:
        browser.save_screenshot(str(path))
    finally:
        browser.set_window_size(width, height)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_page_shows_the_label_a_bar_per_class_and_the_words_toward_a_chosen_label(browser, demo, tmp_path):
    url, run = demo
    info = open_page(browser, url)
    assert info["run"] == run.name
    about = browser.find_element(By.ID, "about").text
    assert f"{info['model']}, text input, trained on {info['data']}" in about
    assert f"accuracy {info['test']['accuracy']:.1f}" in about
    assert [c.text for c in browser.find_elements(By.CSS_SELECTOR, "#about .chip")] == info["labels"]
    assert not browser.find_element(By.ID, "pair").is_displayed()
    ask(browser, QUESTION)
    answer = call(url + "/predict", {"inputs": [QUESTION]})[1]["predictions"][0]
    assert browser.find_element(By.ID, "label").text == answer["label"]
    _check_bars(browser, answer["probs"])
    scores = words_toward(browser, url, [{"text": QUESTION}], answer["label"])
    assert [t for t, _ in scores] == ["who", "wrote", "hamlet", "?"]
    _check_colours(browser, scores)
    other, third = [l for l in info["labels"] if l != answer["label"]][:2]
    Select(browser.find_element(By.ID, "target")).select_by_visible_text(other)
    assert words_toward(browser, url, [{"text": QUESTION}], other) != scores
    browser.find_element(By.CSS_SELECTOR, f'#probs .bar[data-label="{third}"]').click()   # a bar explains its label
    assert Select(browser.find_element(By.ID, "target")).first_selected_option.text == third
    words_toward(browser, url, [{"text": QUESTION}], third)
    Select(browser.find_element(By.ID, "target")).select_by_visible_text(answer["label"])
    words_toward(browser, url, [{"text": QUESTION}], answer["label"])
    screenshot(browser, tmp_path / "page.png")
    if os.environ.get("ADAPTEXT_PAGE_SCREENSHOT"):
        screenshot(browser, Path(os.environ["ADAPTEXT_PAGE_SCREENSHOT"]))


def _check_bars(browser, probs: dict) -> None:
    """A bar per class, the most probable first, each as long as its probability."""
    bars = browser.find_elements(By.CSS_SELECTOR, "#probs .bar")
    assert [b.get_attribute("data-label") for b in bars] == sorted(probs, key=probs.get, reverse=True)
    assert "top" in bars[0].get_attribute("class").split()
    for bar in bars:
        p = probs[bar.get_attribute("data-label")]
        track, fill = bar.find_element(By.CSS_SELECTOR, ".track"), bar.find_element(By.CSS_SELECTOR, ".fill")
        assert fill.size["width"] / track.size["width"] == pytest.approx(p, abs=0.01)
        assert bar.find_element(By.CSS_SELECTOR, ".p").text == f"{100 * p:.1f}%"


def _check_colours(browser, scores: list) -> None:
    """Each word's background is the renderer's colour of its score, as the browser draws it."""
    scale = max(abs(v) for _, v in scores)
    for word, (_, v) in zip(browser.find_elements(By.CSS_SELECTOR, "#words .word"), scores):
        drawn, want = rgba(word.value_of_css_property("background-color")), rgba(colour(v, scale))
        assert drawn[:3] == want[:3] and drawn[3] == pytest.approx(want[3], abs=0.01)


def test_with_the_serve_extra_only_the_page_predicts_and_names_the_extra_for_words(browser, demo, tmp_path,
                                                                                  monkeypatch):
    """No Captum on the machine (a stub that fails to import stands first on the service's path):
    the label and the bars as before, and the /explain answer's one line naming the extra."""
    stub = tmp_path / "no-captum" / "captum"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ImportError('Captum is not installed here')\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(stub.parent), os.environ.get("PYTHONPATH")])))
    _, run = demo
    with serving(run, "--threads", "1") as (url, _):
        open_page(browser, url)
        ask(browser, QUESTION)
        answer = call(url + "/predict", {"inputs": [QUESTION]})[1]["predictions"][0]
        assert browser.find_element(By.ID, "label").text == answer["label"]
        _check_bars(browser, answer["probs"])
        error = browser.find_element(By.ID, "error").text
        assert error.startswith("/explain answered 501") and "pip install 'adaptext[explain]'" in error
        assert not browser.find_elements(By.CSS_SELECTOR, "#words .word")
        screenshot(browser, tmp_path / "no-words.png")


def test_a_refused_input_shows_the_service_s_422_message(browser, demo, tmp_path):
    url, _ = demo
    open_page(browser, url)
    ask(browser, QUESTION)
    assert browser.find_element(By.ID, "result").is_displayed()
    # longer than the service reads: set at once, as typing 100,000 keys would take minutes
    browser.execute_script("document.getElementById('text').value = 'a'.repeat(arguments[0])", MAX_CHARS + 1)
    browser.find_element(By.ID, "predict").click()
    shown = wait(browser, lambda b: b.find_element(By.ID, "error").text)
    status, body = call(url + "/predict", {"inputs": [{"text": "a" * (MAX_CHARS + 1)}]})
    assert status == 422 and shown == f"/predict answered 422: {body['detail']}"
    assert "longer than 100,000 characters" in shown
    assert not browser.find_element(By.ID, "result").is_displayed()      # no answer of an earlier text left
    screenshot(browser, tmp_path / "refused.png")


def test_a_pair_run_reads_its_second_text_and_colours_both(browser, pairs, tmp_path):
    info = open_page(browser, pairs)
    assert info["task"] == "pair" and browser.find_element(By.ID, "pair").is_displayed()
    assert browser.find_element(By.ID, "text-label").text == "First text"
    text, pair = "What is the capital of France ?", "Who wrote Hamlet ?"
    ask(browser, text, pair)
    answer = call(pairs + "/predict", {"inputs": [{"text": text, "pair": pair}]})[1]["predictions"][0]
    assert browser.find_element(By.ID, "label").text == answer["label"]
    words_toward(browser, pairs, [{"text": text, "pair": pair}], answer["label"])
    names = [p.find_element(By.TAG_NAME, "b").text for p in browser.find_elements(By.CSS_SELECTOR, "#words p")]
    assert names == ["text", "pair"]
    screenshot(browser, tmp_path / "pair.png")


def test_auto_s_report_shows_its_candidates_its_plot_and_the_winner_s_words(browser, tmp_path):
    pytest.importorskip("captum")
    import adaptext
    from adaptext.atomic import write_atomic
    from adaptext.auto.report import WHY, candidate_table, write_report
    out = tmp_path / "auto"
    shutil.copytree(LEGACY / "kim_cnn", out / "kim_cnn")        # the winner's own metrics.json
    records = adaptext.load(out / "kim_cnn").explain(["a fine film", "a dull one"], steps=20)
    write_atomic(out / WHY, {"winner": "kim_cnn", "records": records})       # as auto writes it
    state = _auto_state()
    paths = write_report(out, state)
    browser.get(Path(paths["html"]).as_uri())
    table = browser.find_element(By.XPATH, "//h2[.='Candidates']/following-sibling::table[1]")
    header, rows = candidate_table(state)
    assert [th.text for th in table.find_elements(By.CSS_SELECTOR, "thead th")] == header
    assert [[td.text for td in tr.find_elements(By.TAG_NAME, "td")]
            for tr in table.find_elements(By.CSS_SELECTOR, "tbody tr")] == [[str(c).strip() for c in r] for r in rows]
    plot = browser.find_element(By.CSS_SELECTOR, 'img[alt="accuracy against speed"]')
    drawn = browser.execute_script("return arguments[0].complete ? arguments[0].naturalWidth : 0", plot)
    assert drawn == int.from_bytes((out / "frontier.png").read_bytes()[16:20], "big") > 0   # the PNG decoded
    for shown, record in zip(browser.find_elements(By.CSS_SELECTOR, ".why"), records, strict=True):
        (segment,) = record["segments"]
        scale = max(abs(v) for v in segment["scores"])
        words = shown.find_elements(By.CSS_SELECTOR, ".word")
        assert [w.text for w in words] == segment["tokens"]
        for word, v in zip(words, segment["scores"]):
            drawn, want = rgba(word.value_of_css_property("background-color")), rgba(colour(v, scale))
            assert drawn[:3] == want[:3] and drawn[3] == pytest.approx(want[3], abs=0.01)
    screenshot(browser, tmp_path / "report.png")


def _auto_state() -> dict:
    """auto.json of a finished auto run: two candidates done, kim_cnn the winner, one skipped."""
    def done(name, dev, test, speed):
        return {"name": name, "model": name, "status": "done", "dev": dev, "test": test, "speed": speed,
                "size_mb": 0.4, "train_s": 12.5, "notes": [], "command": f"adaptext train --model {name}"}
    skipped = {"name": "transformer", "model": "transformer", "status": "skipped",
               "reason": "needs the transformers extra"}
    return {"metric": "accuracy", "winner": "kim_cnn", "min_speed": 1000, "floor_met": True, "threads": 1,
            "budget_s": 600, "elapsed_s": 95.0, "candidates": [done("bov", 31.0, 30.2, 14000.0),
                                                                done("kim_cnn", 35.0, 33.8, 6000.0), skipped],
            "data": {"train": 4906, "dev": 546, "test": 500, "kind": "text", "multilabel": False, "mean_length": 10.2}}
