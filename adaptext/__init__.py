"""adaptext: neural text classification with convolution and composition whose
parameters depend on the input."""
__version__ = "0.1.0"

from .registry import create_model, list_models, register_model  # noqa: E402


def load(run_dir, device: str = "cpu"):
    """Load a trained run directory: ``clf = load(RUN_DIR); clf.predict(["..."])``."""
    from .api import Classifier
    return Classifier.load(run_dir, device=device)


__all__ = ["load", "create_model", "list_models", "register_model", "__version__"]
