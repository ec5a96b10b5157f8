"""Trees, tags and the batched tree engine.

Readers on real lines of SST (PTB brackets), SICK (parent pointers) and the Penn Treebank
sample; the level-by-level engine against a recursive one-node-at-a-time reference for every
cell; no leakage between trees of a batch; the NLTK tagger and the phrase labeller.
"""
import random
import re
import zipfile

import numpy as np
import pytest
import torch

from adaptext.data import readers as R
from adaptext.data import tree_readers as T
from adaptext.data.batching import Collator, EncodedTree, Item
from adaptext.data.tags import PhraseLabeller, get_tagger, read_treebank, tag_examples, tag_tree
from adaptext.data.trees import tree_from_parents
from adaptext.nn.tree import TreeEncoder
from adaptext.nn.tree_reference import recursive_encode
from adaptext.registry import create_model, get_entry

from conftest import DATA, collate_for, encode_for, needs_data, real_examples



# ------------------------------------------------------------------ helpers
def spans(t):
    """(start, end) token span of every node of a post-order tree."""
    out, k = [None] * len(t), 0
    for i in range(len(t)):
        if t.left[i] < 0:
            out[i], k = (k, k + 1), k + 1
        else:
            out[i] = (out[t.left[i]][0], out[t.right[i]][1])
    return out


def check_postorder_binary(t):
    for i in range(len(t)):
        l, r = t.left[i], t.right[i]
        assert (l < 0) == (r < 0), "a node has both children or none"
        if l >= 0:
            assert l < i and r < i and t.words[i] is None
        else:
            assert t.words[i] is not None
    n_leaves = len(t.leaves())
    assert len(t) == 2 * n_leaves - 1


# ------------------------------------------------------------------ readers
@needs_data
def test_sst_ptb_line():
    line = (DATA / "sst_ptb/dev.txt").read_text(encoding="utf-8").splitlines()[0]
    ex = T.read_sst_trees(DATA / "sst_ptb/dev.txt")[0]
    t = ex.tree
    words = re.findall(r"\(\d ([^()\s]+)\)", line)
    assert t.leaves() == words
    assert words[:5] == ["It", "'s", "a", "lovely", "film"]
    check_postorder_binary(t)
    assert len(t) == line.count("(")                     # SST trees are binary: no node added
    assert ex.label == "positive" and t.labels[t.root] == "positive"     # (3 ...
    # every bracket's label lands on the node with that span: "(4 (3 lovely) (2 film))"
    sp = spans(t)
    i = sp.index((3, 5))
    assert t.labels[i] == "very positive" and t.labels[t.left[i]] == "positive"


@needs_data
def test_sick_parent_pointer_line():
    toks = (DATA / "sick/parsed/dev/a.toks").read_text(encoding="utf-8").splitlines()[0].split(" ")
    parents = [int(p) for p in (DATA / "sick/parsed/dev/a.cparents").read_text().splitlines()[0].split()]
    t = tree_from_parents(toks, parents)
    assert t.leaves() == toks
    check_postorder_binary(t)
    # every constituent of the parent-pointer tree is a span of the binarised tree
    members = {i: set() for i in range(len(parents))}
    for tok in range(len(toks)):
        j = tok
        while True:
            members[j].add(tok)
            if parents[j] == 0:
                break
            j = parents[j] - 1
    gold = {(min(m), max(m) + 1) for m in members.values()}
    assert gold <= set(spans(t))
    # read_sick_trees pairs hypothesis (b) first with premise (a), label from the SICK file
    ex = T.read_sick_trees(DATA / "sick/parsed/dev", R.read_sick(DATA / "sick/SICK_trial.txt"), DATA / "sick/SICK_trial.txt")[0]
    assert ex.pair.leaves() == toks
    assert ex.label in {"ENTAILMENT", "NEUTRAL", "CONTRADICTION"}


@needs_data
def test_sick_parent_pointer_trees_keep_word_order():
    folder = DATA / "sick/parsed/dev"
    bad = []
    for side in "ab":
        toks = (folder / f"{side}.toks").read_text(encoding="utf-8").splitlines()
        pars = (folder / f"{side}.cparents").read_text(encoding="utf-8").splitlines()
        for k, (tl, pl) in enumerate(zip(toks, pars)):
            t = tree_from_parents(tl.split(" "), [int(p) for p in pl.split()])
            if t.leaves() != tl.split(" "):
                bad.append(f"{side}:{k + 1}")
    assert not bad, f"{len(bad)} trees reorder their words, e.g. {bad[:3]}"


@needs_data
def test_ptb_mrg_cleaned_and_binarised():
    z = zipfile.ZipFile(DATA / "ptb_sample/treebank.zip")
    raw = z.read("treebank/combined/wsj_0003.mrg").decode()
    gold = [(tag, w) for tag, w in re.findall(r"\(([^\s()]+) ([^\s()]+)\)", raw) if tag != "-NONE-"]
    assert len(gold) < len(re.findall(r"\(([^\s()]+) ([^\s()]+)\)", raw))   # the file has -NONE- elements
    trees = read_treebank(DATA / "ptb_sample/treebank.zip", files=[3])
    leaves = [(t.tags[i], t.words[i]) for t in trees for i in range(len(t)) if t.left[i] < 0]
    assert leaves == gold                                 # POS tags kept on the leaves, empties gone
    for t in trees:
        check_postorder_binary(t)
        for tag in t.tags:
            assert tag is not None and tag != "-NONE-"
            assert tag.startswith("-") or ("-" not in tag and "=" not in tag)   # NP-SBJ -> NP
    first = read_treebank(DATA / "ptb_sample/treebank.zip", files=[1])[0]
    assert first.leaves()[:4] == ["Pierre", "Vinken", ",", "61"] and first.tags[first.root] == "S"
    # (NP (DT the) (NN board)) survives as an NP over DT and NN
    sp, words = spans(first), first.leaves()
    i = sp.index((words.index("the"), words.index("board") + 1))
    assert first.tags[i] == "NP" and (first.tags[first.left[i]], first.tags[first.right[i]]) == ("DT", "NN")


# ------------------------------------------------------------------ tags
def test_nltk_tagger_matches_the_nltk_data_readme():
    tagger = get_tagger("nltk")
    assert tagger("It is a very good movie".split()) == ["PRP", "VBZ", "DT", "RB", "JJ", "NN"]


@needs_data
def test_phrase_labeller_shipped_and_refit():
    shipped = PhraseLabeller.load()
    assert shipped("DT", "NN") == "NP"
    fresh = PhraseLabeller.fit(read_treebank(DATA / "ptb_sample/treebank.zip", files=range(1, 30)))
    assert fresh("DT", "NN") == "NP" and fresh("IN", "NP") == "PP"
    again = PhraseLabeller.from_json(fresh.to_json())
    for key in [("DT", "NN"), ("VB", "NP"), ("ZZZ", "NN"), ("DT", "ZZZ"), ("ZZZ", "ZZZ")]:
        assert again(*key) == fresh(*key)
    assert fresh("ZZZ", "ZZZ") == fresh.default           # unseen tags back off to the global tag


@needs_data
def test_tag_tree_on_a_real_sst_tree():
    ex = real_examples("tree", 1)[0]
    t = tag_tree(ex.tree, get_tagger("nltk"), PhraseLabeller.load())
    assert all(tag is not None for tag in t.tags)
    sp, words = spans(t), t.leaves()
    lovely_film = sp.index((words.index("lovely"), words.index("film") + 1))    # (lovely film)
    assert [t.tags[t.left[lovely_film]], t.tags[t.right[lovely_film]]] == ["JJ", "NN"]
    assert t.tags[lovely_film] == "NP"
    pair = tag_examples(real_examples("tree_pair", 2))
    assert all(tag is not None for ex in pair for tr in (ex.tree, ex.pair) for tag in tr.tags)


# ------------------------------------------------------------------ engine vs reference
def random_tree(rng, n_leaves, vocab, n_tags):
    left, right = [], []

    def gen(n):
        if n == 1:
            left.append(-1); right.append(-1)
            return len(left) - 1
        k = rng.randint(1, n - 1)
        a, b = gen(k), gen(n - k)
        left.append(a); right.append(b)
        return len(left) - 1

    gen(n_leaves)
    left, right = np.asarray(left), np.asarray(right)
    h = np.zeros(len(left), np.int64)
    for i in range(len(left)):
        if left[i] >= 0:
            h[i] = 1 + max(h[left[i]], h[right[i]])
    words = np.where(left < 0, [rng.randrange(2, vocab) for _ in left], 0)
    tags = np.asarray([rng.randrange(1, n_tags) for _ in left])
    return EncodedTree(words.astype(np.int64), tags.astype(np.int64), left, right, h, np.full(len(left), -1))


def tree_batch(trees):
    return Collator(2)([Item(index=i, label=0, tree=t) for i, t in enumerate(trees)]).tree


CELLS = [("recnn", False, "concat", False), ("treelstm", False, "concat", False),
         ("recnn", False, "concat", True), ("treelstm", False, "concat", True),
         ("recnn", True, "concat", True), ("recnn", True, "multi", True),
         ("treelstm", True, "concat", True), ("treelstm", True, "multi", True),
         ("treelstm", True, "multi", False), ("recnn", True, "concat", False)]


@pytest.mark.parametrize("cell,hyper,fusion,head_gate", CELLS,
                         ids=[f"{c}-{'hyper-' + f if h else 'plain'}-{'gate' if g else 'nogate'}" for c, h, f, g in CELLS])
def test_batched_engine_equals_recursive_reference(cell, hyper, fusion, head_gate):
    torch.manual_seed(0)
    rng = random.Random(1)
    D, T = 7, 5
    enc = TreeEncoder(cell, D, 6, hyper=hyper, tag_dim=T, hyper_hidden=4, hyper_input=5, z_dim=3,
                      fusion=fusion, head_gate=head_gate).double().eval()
    # perturb every parameter so no gate sits at its special initial value (d = 1, bias = 0)
    with torch.no_grad():
        for p in enc.parameters():
            p.add_(0.3 * torch.randn_like(p))
    trees = [random_tree(rng, n, 30, 9) for n in (1, 2, 5, 9, 3, 13)]
    tb = tree_batch(trees)
    emb, temb = torch.randn(30, D, dtype=torch.float64), torch.randn(9, T, dtype=torch.float64)
    x, t = emb[tb.words], (temb[tb.tags] if hyper else None)
    w = torch.randn(len(trees), 6, dtype=torch.float64)
    outs, grads = [], []
    for encode in (enc, lambda *a: recursive_encode(enc, *a)):
        enc.zero_grad()
        out = encode(x, t, tb)
        (out["h"][tb.roots] * w).sum().backward()
        outs.append(out)
        grads.append([p.grad.clone() for p in enc.parameters()])
    fast, slow = outs
    assert torch.allclose(fast["h"], slow["h"], atol=1e-12)
    if hyper:
        assert torch.allclose(fast["z_u"], slow["z_u"], atol=1e-12)
    # gradients agree too (the gathers and the level concatenation are autograd-safe)
    for gf, gs in zip(*grads):
        assert torch.allclose(gf, gs, atol=1e-10)
    # word vectors given for the leaves only (in levels[0] order, as the models pass them)
    with torch.no_grad():
        assert torch.allclose(enc(x[tb.levels[0]], t, tb)["h"], slow["h"], atol=1e-12)


def test_engine_composes_one_level_per_step():
    enc = TreeEncoder("treelstm", 4, 3, hyper=True, tag_dim=2, hyper_hidden=2, hyper_input=2, z_dim=2,
                      head_gate=True).eval()
    rng = random.Random(0)
    tb = tree_batch([random_tree(rng, n, 10, 5) for n in (4, 11, 7, 1)])
    sizes = []
    enc.cell.register_forward_hook(lambda m, args, out: sizes.append(out.shape[0]))
    enc(torch.randn(tb.num_nodes, 4), torch.randn(tb.num_nodes, 2), tb)
    assert sizes == [len(level) for level in tb.levels]       # one call per height, all trees at once
    assert sum(sizes) == tb.num_nodes


@needs_data
@pytest.mark.parametrize("name", ["treelstm", "tg_htreelstm", "tg_hrecnn"])
def test_no_leak_between_trees_of_a_batch(name):
    torch.manual_seed(0)
    examples = tag_examples(real_examples("tree", 4))
    entry = get_entry(name)
    items, V, C, n_tags, _ = encode_for(examples)
    model = create_model(name, num_classes=C, vocab_size=V, tag_vocab_size=n_tags, **entry.test_config).eval()
    both = collate_for(items, C, model)
    out = model(both)
    for k, item in enumerate(items):
        alone = model(collate_for([item], C, model))
        assert torch.allclose(alone["logits"][0], out["logits"][k], atol=1e-6)
        nodes = (both.tree.tree_of == k).nonzero().flatten()
        assert torch.allclose(alone["node_logits"], out["node_logits"][nodes], atol=1e-6)


@needs_data
def test_pair_model_shares_the_encoder_and_is_symmetric_in_its_features():
    torch.manual_seed(0)
    examples = tag_examples(real_examples("tree_pair", 4))
    items, V, C, n_tags, _ = encode_for(examples)
    model = create_model("tg_htreelstm", num_classes=C, vocab_size=V, kind="tree_pair", tag_vocab_size=n_tags,
                         **get_entry("tg_htreelstm").test_config).eval()
    b = collate_for(items, C, model)
    logits = model(b)
    b.tree, b.pair_tree = b.pair_tree, b.tree                 # [h_s*h_t; |h_s-h_t|] is symmetric
    assert logits.shape == (4, C) and torch.allclose(model(b), logits, atol=1e-6)


@needs_data
def test_explain_draw_and_top_node_types(tmp_path):
    from adaptext.explain.tree import draw_tree, top_node_types

    torch.manual_seed(0)
    examples = tag_examples(real_examples("tree", 5))
    items, V, C, n_tags, _ = encode_for(examples)
    tag_names = sorted({t for ex in examples for t in ex.tree.tags})
    tag_names = ["<pad>", "<unk>"] + tag_names                 # the Vocab order encode_for builds
    model = create_model("tg_htreelstm", num_classes=C, vocab_size=V, tag_vocab_size=n_tags,
                         **get_entry("tg_htreelstm").test_config).eval()
    b = collate_for(items, C, model)
    info = draw_tree(model, collate_for(items[:1], C, model), examples[0].tree, tmp_path / "t.png", dim=1)
    assert (tmp_path / "t.png").stat().st_size > 1000
    z = model.encode(b.tree)["z_u"]
    first = (b.tree.tree_of == 0).nonzero().flatten()
    assert np.allclose([n["value"] for n in info["nodes"]], z[first, 1].detach().numpy(), atol=1e-6)
    top = top_node_types(model, [b], k=3, tag_names=tag_names, min_count=1)
    # reference: mean z_u per (left tag, right tag) over the inner nodes, straightforward loop
    acc = {}
    for i in range(b.tree.num_nodes):
        l = int(b.tree.left[i])
        if l >= 0:
            key = f"{tag_names[b.tree.tags[l]]}+{tag_names[b.tree.tags[b.tree.right[i]]]}"
            acc.setdefault(key, []).append(z[i].detach())
    for d in range(z.shape[1]):
        best = sorted(acc, key=lambda k: -float(torch.stack(acc[k]).mean(0)[d]))[:3]
        assert [r["type"] for r in top[d]] == best
        assert top[d][0]["count"] == len(acc[best[0]])


# ------------------------------------------------------------------ prediction on plain text
@needs_data
def test_plain_text_to_a_tree_run_is_cut_at_max_length_and_flagged(tmp_path):
    """A text without a parse is parsed (the run's --parser) over its tokens, cut at the run's
    max_length as texts are, and the cut is said."""
    import adaptext
    from adaptext.data.examples import TreeExample, TreePairExample
    from adaptext.training.run import train_run

    trees = tmp_path / "trees.txt"
    trees.write_text("".join((DATA / "sst_ptb/dev.txt").read_text().splitlines(keepends=True)[:40]))
    run = tmp_path / "t"
    train_run({"model": "treelstm", "data": str(trees), "test": str(trees), "out": str(run), "hidden": 8,
               "epochs": 1, "progress": False, "max_length": 6})
    clf = adaptext.load(run)
    long_text = "a lovely film that never quite finds its footing in the end"          # 12 tokens
    parse = "(3 (2 a) (3 (3 lovely) (2 film)))"
    out = clf.predict([long_text, "a lovely film", {"tree": parse}])
    assert [o.get("truncated", False) for o in out] == [True, False, False]
    # a text is a text whatever its first character: brackets are words of it, not a parse
    (bracketed,) = clf.as_examples(["(not bad at all)"])
    assert bracketed.tree.leaves() == ["(", "not", "bad", "at", "all", ")"]
    assert clf.as_examples([{"tree": parse}])[0].tree.leaves() == ["a", "lovely", "film"]
    # files for predict: a file of parses (every line a tree) is read as parses, any other as texts
    from adaptext.runs.inputs import InputReader
    reader = InputReader("tree", clf.config, clf.tokens, 0)
    assert reader.read(str(trees))[0] == {"tree": (DATA / "sst_ptb/dev.txt").read_text().splitlines()[0]}
    texts = tmp_path / "texts.txt"
    texts.write_text("(not bad) at all\nsecond line\n")
    assert reader.read(str(texts)) == ["(not bad) at all", "second line"]
    _, items = clf.batch([long_text, {"text": "a lovely film"}])
    assert [len(it.tree.words) for it in items] == [2 * 6 - 1, 2 * 3 - 1]     # 6 and 3 leaves
    assert clf.as_examples([long_text])[0].tree.leaves() == long_text.split()[:6]
    assert clf.predict([long_text])[0]["probs"] == clf.predict([" ".join(long_text.split()[:6])])[0]["probs"]
    # tagging (the tag-guided models) keeps the flag on both kinds of example
    cut = clf.as_examples([long_text])[0]
    pair = TreePairExample(cut.tree, cut.tree, where="x:1", truncated=True)
    tagged = tag_examples([cut, pair, TreeExample(cut.tree)])
    assert [ex.truncated for ex in tagged] == [True, True, False]
    assert all(t is not None for t in tagged[0].tree.tags)
