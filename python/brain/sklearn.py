"""scikit-learn estimators trained by brain: ``MLPClassifier`` and ``MLPRegressor``.

They take scikit-learn's parameter names where these mean the same thing (``hidden_layer_sizes``, ``activation``,
``solver``, ``learning_rate_init``, ``batch_size``, ``max_iter``, ``shuffle``, ``random_state``, ``tol``,
``momentum``, ``beta_1``, ``beta_2``, ``epsilon``, ``n_iter_no_change``, ``early_stopping``,
``validation_fraction``) plus ``backend`` (``"cpu"``, ``"cuda:0"``, ... or a ``brain.TrainingBackend``) and
``memory_budget_mib``. They work in ``Pipeline``, ``cross_val_score`` and ``GridSearchCV`` (``get_params`` /
``set_params``, ``clone``), and pickle (the network travels as its JSON model file).

The weights start as scikit-learn's do (Glorot-uniform weights and biases). Differences from scikit-learn's
estimators: ``alpha`` (an L2 penalty added to the loss) has no equivalent and is not
offered; ``solver="lbfgs"`` and Nesterov momentum are not offered; X is converted once to C-contiguous float32 (the
library's arithmetic) when it is not already. Training is epoch by epoch on one ``brain.TrainingSession``; each
epoch is one pass over the data in mini-batches, as with scikit-learn's ``max_iter``.
"""

import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import accuracy_score, r2_score
from sklearn.preprocessing import LabelBinarizer
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d

from . import _brain

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data as _validate_data
except ImportError:  # earlier releases: the estimator's own method
    def _validate_data(estimator, *args, **kwargs):
        return estimator._validate_data(*args, **kwargs)

__all__ = ["MLPClassifier", "MLPRegressor"]

_ABSENT = object()  # a fitted attribute the new fit does not have (removed when the fit succeeds)

# scikit-learn's activation names, and brain's own (any name brain.Activation parses is accepted too).
_ACTIVATIONS = {"identity": "linear", "logistic": "sigmoid", "tanh": "tanh", "relu": "relu"}


def _activation(name):
    try:
        return _brain.Activation(_ACTIVATIONS.get(name, name))
    except (_brain.Error, TypeError) as error:
        raise ValueError(
            f"activation {name!r} is not supported; expected one of identity, logistic, tanh, relu "
            f"(or a brain.Activation name such as gelu or leaky_relu)") from error


class _BaseMLP(BaseEstimator):
    """Shared parameters and training loop of MLPClassifier and MLPRegressor."""

    def __init__(self, hidden_layer_sizes=(100,), activation="relu", *, solver="adam", batch_size="auto",
                 learning_rate_init=0.001, max_iter=200, shuffle=True, random_state=None, tol=1e-4,
                 momentum=0.9, beta_1=0.9, beta_2=0.999, epsilon=1e-8, early_stopping=False,
                 validation_fraction=0.1, n_iter_no_change=10, backend="cpu", memory_budget_mib=0):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.activation = activation
        self.solver = solver
        self.batch_size = batch_size
        self.learning_rate_init = learning_rate_init
        self.max_iter = max_iter
        self.shuffle = shuffle
        self.random_state = random_state
        self.tol = tol
        self.momentum = momentum
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.backend = backend
        self.memory_budget_mib = memory_budget_mib

    # --- helpers ---------------------------------------------------------------------------------------------
    def _training_backend(self):
        if isinstance(self.backend, _brain.TrainingBackend):
            return self.backend
        return _brain.TrainingBackend.parse(str(self.backend), int(self.memory_budget_mib))

    def _optimizer(self):
        if self.solver == "adam":
            opt = _brain.Optimizer.adam(float(self.learning_rate_init))
            opt.beta1, opt.beta2, opt.epsilon = float(self.beta_1), float(self.beta_2), float(self.epsilon)
            return opt
        if self.solver == "sgd":
            return _brain.Optimizer.sgd(float(self.learning_rate_init), float(self.momentum))
        raise ValueError(f"solver {self.solver!r} is not supported; expected 'adam' or 'sgd'")

    def _check_parameters(self):
        sizes = self.hidden_layer_sizes
        sizes = [sizes] if isinstance(sizes, numbers.Integral) else list(sizes)
        if any(not isinstance(s, numbers.Integral) or s <= 0 for s in sizes):
            raise ValueError(f"hidden_layer_sizes must be positive integers, got {self.hidden_layer_sizes!r}")
        if not isinstance(self.max_iter, numbers.Integral) or self.max_iter <= 0:
            raise ValueError(f"max_iter must be a positive integer, got {self.max_iter!r}")
        if self.learning_rate_init <= 0:
            raise ValueError(f"learning_rate_init must be > 0, got {self.learning_rate_init!r}")
        if not 0 < self.validation_fraction < 1:
            raise ValueError(f"validation_fraction must be in (0, 1), got {self.validation_fraction!r}")
        if self.batch_size != "auto" and (not isinstance(self.batch_size, numbers.Integral) or self.batch_size < 1):
            raise ValueError(f"batch_size must be 'auto' or a positive integer, got {self.batch_size!r}")
        return [int(s) for s in sizes]

    def _build(self, n_inputs, n_outputs, output_activation, seed, rng):
        builder = _brain.Network.builder().input_size(n_inputs)
        hidden = _activation(self.activation)
        sizes = self._check_parameters()
        for units in sizes:
            builder.dense(units, hidden)
        builder.dense(n_outputs, output_activation)
        network = builder.optimizer(self._optimizer()).seed(seed).build()
        # scikit-learn's initialisation, so that the estimator trains as scikit-learn's does: weights and biases
        # uniform in +-sqrt(6 / (fan_in + fan_out)), sqrt(2 / ...) for logistic layers. (brain's own He initialisation
        # with zero biases generalised about 2 points worse on held-out data in the estimator's benchmark.)
        factor = 2.0 if hidden == _brain.Activation.Sigmoid else 6.0
        widths = [n_inputs, *sizes, n_outputs]
        parameters = []
        for fan_in, fan_out in zip(widths, widths[1:]):
            bound = np.sqrt(factor / (fan_in + fan_out))
            parameters.append(rng.uniform(-bound, bound, (fan_in, fan_out)).T.ravel())  # brain's layout: out x in
            parameters.append(rng.uniform(-bound, bound, fan_out))
        network.set_parameters(np.concatenate(parameters).astype(np.float32))
        return network

    def _fit_network(self, X, Y, output_activation, fitted):
        """Train a new network on float32 X (rows x features) and Y (rows x outputs); then sets the fitted
        attributes: ``fitted`` (those fit worked out from the data) and the network's."""
        self._check_parameters()
        rng = check_random_state(self.random_state)
        seed = int(rng.randint(np.iinfo(np.int32).max))
        network = self._build(X.shape[1], Y.shape[1], output_activation, seed, rng)
        X_val = Y_val = None
        if self.early_stopping:
            n_val = max(1, int(round(self.validation_fraction * X.shape[0])))
            if X.shape[0] - n_val < 1:
                raise ValueError(f"early_stopping needs at least 2 samples, got {X.shape[0]}")
            order = rng.permutation(X.shape[0])
            X_val, Y_val = X[order[:n_val]], Y[order[:n_val]]
            X, Y = np.ascontiguousarray(X[order[n_val:]]), np.ascontiguousarray(Y[order[n_val:]])
        rows = X.shape[0]
        batch = min(200, rows) if self.batch_size == "auto" else min(int(self.batch_size), rows)
        config = _brain.TrainConfig(epochs=int(self.max_iter), batch_size=batch, shuffle=bool(self.shuffle),
                                    seed=seed)
        data = _brain.Dataset(X, Y)
        losses, scores = [], []
        best_score, best_weights, stall = None, None, 0
        converged, interrupt = False, None
        with _brain.TrainingSession(network, data, config=config, backend=self._training_backend()) as session:
            try:
                for _ in range(int(self.max_iter)):
                    losses.append(session.train_epoch())
                    if self.early_stopping:
                        checkpoint = session.checkpoint()
                        candidate = network.__copy__()
                        candidate.restore_checkpoint(checkpoint)
                        score = self._validation_score(candidate, X_val, Y_val)
                        scores.append(score)
                        improved = best_score is None or score > best_score + self.tol
                        if best_score is None or score > best_score:
                            best_score, best_weights = score, checkpoint
                    else:
                        loss = losses[-1]
                        improved = best_score is None or loss < best_score - self.tol
                        if best_score is None or loss < best_score:
                            best_score = loss
                    stall = 0 if improved else stall + 1
                    if stall >= self.n_iter_no_change:
                        converged = True
                        break
            except KeyboardInterrupt as error:
                # Ctrl-C, as with Network.fit: the estimator keeps the epochs that completed (none: fit fails).
                if not losses:
                    raise
                interrupt = error
            if self.early_stopping and best_weights is None:  # interrupted before the first score
                best_weights = session.checkpoint()
            final = best_weights if self.early_stopping else session.checkpoint()
            # Ctrl-C may land after an epoch's train_epoch returned and before its loss was kept: the epochs
            # trained are the session's count, and loss_curve_ lacks that one loss.
            trained = session.checkpoint().epochs_trained if interrupt is not None else len(losses)
            stats = session.stats()
        network.restore_checkpoint(final)
        # Only now, with the network trained, does the estimator change: a fit that fails leaves it as it was.
        for name, value in fitted.items():
            if value is _ABSENT:
                self.__dict__.pop(name, None)
            else:
                setattr(self, name, value)
        self.loss_curve_ = losses
        self.validation_scores_ = scores if self.early_stopping else None
        self.training_stats_ = stats
        self.network_ = network
        self.n_iter_ = int(trained)
        self.loss_ = losses[-1]
        self.best_loss_ = None if self.early_stopping else best_score
        self.best_validation_score_ = best_score if self.early_stopping else None
        if interrupt is not None:
            raise interrupt
        if not converged:
            warnings.warn(f"brain: the optimizer did not converge within max_iter={self.max_iter} epochs",
                          ConvergenceWarning)
        return self

    def _validated(self, X, y, **kwargs):
        """scikit-learn's validation of X and y; it sets n_features_in_ (and feature_names_in_), which are kept
        only when the fit that follows succeeds."""
        before = {name: self.__dict__[name] for name in ("n_features_in_", "feature_names_in_")
                  if name in self.__dict__}
        X, y = _validate_data(self, X, y, dtype=np.float32, order="C", **kwargs)
        fitted = {name: self.__dict__.pop(name, _ABSENT) for name in ("n_features_in_", "feature_names_in_")}
        self.__dict__.update(before)
        return X, y, fitted

    def _forward(self, X):
        check_is_fitted(self, "network_")
        X = _validate_data(self, X, reset=False, dtype=np.float32, order="C")
        return self.network_.predict(X)

    def __getstate__(self):
        # The network pickles as its JSON model file; the session's statistics are not kept.
        state = super().__getstate__()
        state.pop("training_stats_", None)
        return state


class MLPClassifier(ClassifierMixin, _BaseMLP):
    """Multilayer perceptron classifier trained by brain (scikit-learn's MLPClassifier interface).

    Labels may be of any type (``classes_`` holds them, sorted). Two classes use one sigmoid output with binary
    cross-entropy, more classes a softmax output with categorical cross-entropy. ``early_stopping`` holds out
    ``validation_fraction`` of the rows and keeps the weights of the epoch with the best validation accuracy.
    """

    def fit(self, X, y):
        """Train on X (n_samples x n_features) and labels y; returns self."""
        X, y, fitted = self._validated(X, y)
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        classes = np.unique(y)
        if len(classes) < 2:
            raise ValueError(f"MLPClassifier needs samples of at least 2 classes in the data, but the data "
                             f"contains only one class: {classes[0]!r}")
        binarizer = LabelBinarizer().fit(classes)
        Y = np.ascontiguousarray(binarizer.transform(y), dtype=np.float32)
        output = _brain.Activation.Sigmoid if len(classes) == 2 else _brain.Activation.Softmax
        return self._fit_network(X, Y, output, {**fitted, "classes_": classes, "_binarizer": binarizer})

    def _validation_score(self, network, X, Y):
        out = network.predict(X)
        truth = Y[:, 0] >= 0.5 if Y.shape[1] == 1 else Y.argmax(axis=1)
        guess = out[:, 0] >= 0.5 if out.shape[1] == 1 else out.argmax(axis=1)
        return accuracy_score(truth, guess)

    def predict_proba(self, X):
        """Class probabilities, one column per entry of classes_."""
        out = self._forward(X)
        if out.shape[1] == 1:
            p = out[:, 0].astype(np.float64)
            return np.column_stack([1.0 - p, p])
        return out.astype(np.float64)

    def predict_log_proba(self, X):
        """Logarithm of predict_proba."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X):
        """The most probable label of each row."""
        check_is_fitted(self, "network_")
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


class MLPRegressor(RegressorMixin, _BaseMLP):
    """Multilayer perceptron regressor trained by brain (scikit-learn's MLPRegressor interface).

    A linear output layer with mean squared error; y may have several columns (multi-output). ``early_stopping``
    holds out ``validation_fraction`` of the rows and keeps the weights of the epoch with the best validation R2.
    """

    def fit(self, X, y):
        """Train on X (n_samples x n_features) and targets y (n_samples or n_samples x n_outputs); returns self."""
        X, y, fitted = self._validated(X, y, multi_output=True, y_numeric=True)
        Y = np.ascontiguousarray(y.reshape(-1, 1) if y.ndim == 1 else y, dtype=np.float32)
        return self._fit_network(X, Y, _brain.Activation.Linear, {**fitted, "_y_1d": y.ndim == 1})

    def _validation_score(self, network, X, Y):
        return r2_score(Y, network.predict(X))

    def predict(self, X):
        """Predicted targets (1-D when the model was fit on a 1-D y)."""
        out = self._forward(X).astype(np.float64)
        return out[:, 0] if self._y_1d else out

    def _more_tags(self):  # scikit-learn < 1.6
        return {"multioutput": True}

    def __sklearn_tags__(self):  # scikit-learn >= 1.6
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags
