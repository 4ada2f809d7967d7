"""brain.sklearn.MLPClassifier / MLPRegressor: scikit-learn's estimator checks, pipelines, cross-validation and
grid search."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator

import brain
from brain.sklearn import MLPClassifier, MLPRegressor

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.mark.parametrize("estimator", [MLPClassifier(random_state=0), MLPRegressor(random_state=0)],
                         ids=["MLPClassifier", "MLPRegressor"])
def test_scikit_learn_estimator_checks(estimator):
    check_estimator(estimator)


def test_string_labels_pipeline_and_cross_val_score(blobs):
    X, labels = blobs
    names = np.array(["red", "green", "blue"])[labels]
    model = make_pipeline(StandardScaler(), MLPClassifier(hidden_layer_sizes=(32,), max_iter=200, random_state=1))
    scores = cross_val_score(model, X, names, cv=3)
    assert scores.shape == (3,) and scores.min() > 0.9
    model.fit(X, names)
    assert list(model.classes_) == ["blue", "green", "red"]
    assert set(model.predict(X)) <= {"red", "green", "blue"}
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-5)
    assert model.score(X, names) > 0.95


def test_binary_classifier_uses_one_sigmoid_output(blobs):
    X, labels = blobs
    y = labels == 0
    clf = MLPClassifier(hidden_layer_sizes=(8,), max_iter=300, random_state=0).fit(X, y)
    assert clf.network_.output_size == 1 and list(clf.classes_) == [False, True]
    assert clf.predict_proba(X).shape == (len(X), 2) and clf.score(X, y) > 0.95


@pytest.mark.parametrize("activation, factor", [("relu", 6.0), ("logistic", 2.0), ("sigmoid", 2.0)])
def test_initial_weights_are_drawn_as_scikit_learn_draws_them(blobs, activation, factor):
    """Weights and biases uniform in +-sqrt(factor / (fan_in + fan_out)); a learning rate too small to move them
    leaves the initial draw in the fitted network."""
    X, labels = blobs
    clf = MLPClassifier(hidden_layer_sizes=(64, 32), activation=activation, learning_rate_init=1e-12, max_iter=1,
                        random_state=3).fit(X, labels)
    params, offset = clf.network_.parameters, 0
    for fan_in, fan_out in ((4, 64), (64, 32), (32, 3)):
        bound = np.sqrt(factor / (fan_in + fan_out))
        w = params[offset:offset + fan_in * fan_out]
        b = params[offset + fan_in * fan_out:offset + fan_in * fan_out + fan_out]
        offset += fan_in * fan_out + fan_out
        assert np.abs(w).max() <= bound * (1 + 1e-5) and np.abs(b).max() <= bound * (1 + 1e-5)
        assert np.abs(w).max() > 0.8 * bound, "the draw spans the bound"
        assert np.count_nonzero(b) == fan_out, "biases are drawn, not zero"
    assert offset == params.size
    again = MLPClassifier(hidden_layer_sizes=(64, 32), activation=activation, learning_rate_init=1e-12, max_iter=1,
                          random_state=3).fit(X, labels)
    np.testing.assert_array_equal(again.network_.parameters, params)


def test_grid_search_clone_and_params(blobs):
    X, labels = blobs
    clf = MLPClassifier(hidden_layer_sizes=(8,), max_iter=20, backend=brain.TrainingBackend.cpu())
    assert clf.get_params()["hidden_layer_sizes"] == (8,)
    clf.set_params(learning_rate_init=0.01, solver="sgd")
    twin = clone(clf)
    assert twin.get_params()["learning_rate_init"] == 0.01 and twin is not clf
    search = GridSearchCV(MLPClassifier(max_iter=100, random_state=0),
                          {"hidden_layer_sizes": [(4,), (16,)], "learning_rate_init": [0.001, 0.01]}, cv=2)
    search.fit(X, labels)
    assert search.best_score_ > 0.9 and set(search.best_params_) == {"hidden_layer_sizes", "learning_rate_init"}


def test_regressor_learns_and_pickles(regression):
    X, y = regression
    reg = MLPRegressor(hidden_layer_sizes=(32,), learning_rate_init=0.01, max_iter=100, random_state=0)
    reg.fit(X, y.ravel())
    assert reg.score(X, y.ravel()) > 0.98
    assert reg.predict(X).shape == (len(X),) and reg.n_iter_ == len(reg.loss_curve_)
    again = pickle.loads(pickle.dumps(reg))
    np.testing.assert_array_equal(again.predict(X), reg.predict(X))


def test_early_stopping_and_convergence(regression):
    X, y = regression
    reg = MLPRegressor(hidden_layer_sizes=(16,), learning_rate_init=0.01, max_iter=500, early_stopping=True,
                       n_iter_no_change=5, random_state=0).fit(X, y.ravel())
    assert reg.n_iter_ < 500 and len(reg.validation_scores_) == reg.n_iter_
    assert reg.best_validation_score_ == max(reg.validation_scores_) > 0.95
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        MLPRegressor(hidden_layer_sizes=(4,), max_iter=2, random_state=0).fit(X, y.ravel())
    assert any(issubclass(w.category, ConvergenceWarning) for w in caught)


def test_bad_parameters_and_backends(blobs):
    X, labels = blobs
    with pytest.raises(ValueError, match="lbfgs"):
        MLPClassifier(solver="lbfgs").fit(X, labels)
    with pytest.raises(ValueError, match="activation"):
        MLPClassifier(activation="swish").fit(X, labels)
    with pytest.raises(brain.PluginNotFound):
        MLPClassifier(backend="nosuchplugin:0", memory_budget_mib=64, max_iter=1).fit(X, labels)


@pytest.mark.parametrize("make", [MLPClassifier, MLPRegressor])
def test_a_failed_refit_leaves_the_fitted_estimator_as_it_was(blobs, make):
    X, labels = blobs
    y = np.array(["a", "b", "c"])[labels] if make is MLPClassifier else labels.astype(np.float64)
    est = make(hidden_layer_sizes=(8,), max_iter=3, random_state=0).fit(X, y)
    before = {k: v for k, v in vars(est).items() if k.endswith("_")}
    predicted = est.predict(X)
    est.set_params(backend="nosuchplugin:0", memory_budget_mib=64)
    other = (np.where(X[:, 0] > 0, "x", "y") if make is MLPClassifier else X[:, 0])
    with pytest.raises(brain.PluginNotFound):
        est.fit(X[:, :2], other)  # other columns, other labels: nothing of them may stay behind
    after = {k: v for k, v in vars(est).items() if k.endswith("_")}
    assert after.keys() == before.keys() and all(after[k] is before[k] for k in before)
    assert est.n_features_in_ == X.shape[1]
    np.testing.assert_array_equal(est.predict(X), predicted)


def test_ctrl_c_keeps_the_epochs_that_completed(regression):
    import _thread
    import threading
    X, y = regression
    X, y = np.repeat(X, 20, axis=0), np.repeat(y.ravel(), 20)
    reg = MLPRegressor(hidden_layer_sizes=(64,), max_iter=10**6, n_iter_no_change=10**9, random_state=0)
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        reg.fit(X, y)
    timer.join()
    # The estimator is fitted with what was trained: its count is the network's, at most one loss short.
    assert reg.n_iter_ == reg.network_.epochs_trained >= 1
    assert reg.n_iter_ - 1 <= len(reg.loss_curve_) <= reg.n_iter_
    assert reg.predict(X[:5]).shape == (5,) and np.isfinite(reg.predict(X)).all()
