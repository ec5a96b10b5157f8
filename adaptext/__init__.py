"""adaptext: neural text classification with convolution and composition whose
parameters depend on the input."""
__version__ = "0.1.0"


def __getattr__(name: str):
    """The registry's names, imported when first asked for: the command line checks its
    arguments without importing torch, which the registry needs."""
    if name in ("create_model", "list_models", "register_model"):
        from . import registry
        return getattr(registry, name)
    raise AttributeError(f"module 'adaptext' has no attribute {name!r}")


def load(run_dir, device: str = "cpu"):
    """Load a trained run directory: ``clf = load(RUN_DIR); clf.predict(["..."])``."""
    from .api import Classifier
    return Classifier.load(run_dir, device=device)


def fit(train, dev=None, test=None, **options):
    """Train a model on examples in memory, as scikit-learn's ``fit`` does, and return it loaded:
    ``clf = adaptext.fit([("a fine film", "pos"), ...], model="kim_cnn", epochs=5, out="runs/x")``.

    ``train`` / ``dev`` / ``test``: examples (``adaptext.data.examples``) or ``(text, label)`` /
    ``(text, pair, label)`` tuples; without ``dev``, a stratified 10% of ``train`` is held out.
    ``options``: any ``adaptext train`` option by its name (``lr``, ``batch_size``, the model's
    own; no progress bar unless ``progress=True``). The run directory is written as ``adaptext train`` writes it; ``clf.metrics`` holds
    its dev (and test) metrics."""
    from .training.run import fit_examples
    options.setdefault("progress", False)
    out, metrics = fit_examples(train, dev, test, log=lambda *_: None, **options)
    clf = load(out)
    clf.metrics = metrics
    return clf


__all__ = ["load", "fit", "create_model", "list_models", "register_model", "__version__"]
