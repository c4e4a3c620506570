"""Every feature space against the shared contract; the registry; the key codec."""

from types import SimpleNamespace

import numpy as np
import pytest

from feature_space_contract import FeatureSpaceContract
from ultrafs.errors import ParameterError
from ultrafs.features import (FEATURE_SPACES, FeatureSpace, LinearFeatures,
                              PairKeys, PolyFeatures, build_feature_space,
                              feature_space_from_spec, make_feature_space,
                              register_feature_space)
from ultrafs.features.keys import MAX_PAIR_FEATURES
from ultrafs.kernels.poly import pair_key
from ultrafs.store import InMemoryStore
from ultrafs.store.writers.zarr_writer import write_store

ID_OFFSET = 1      # LIBSVM-like numbering: ids differ from keys


# ------------------------------------------------------------- linear
class LinearContract(FeatureSpaceContract):
    def expand(self, X, space):
        m = X.shape[1]
        return X, np.arange(m, dtype=np.int64), [j + ID_OFFSET for j in range(m)]

    def absent_ids(self, space):
        m = space.store.n_features
        return [m + ID_OFFSET, m + 7, ID_OFFSET - 1]


class TestLinearValued(LinearContract):
    """Valued data held in memory (values always stored)."""

    data_kinds = ("valued", "signed")

    def make_space(self, X, y, *, dtype, tmp_path):
        return LinearFeatures(InMemoryStore(X, y, dtype=dtype, id_offset=ID_OFFSET))


class TestLinearBinary(LinearContract):
    """Binary data in a Zarr store, whose blocks come without values."""

    data_kinds = ("binary",)

    def make_space(self, X, y, *, dtype, tmp_path):
        store = write_store(tmp_path / "binary.zarr", X, y, dtype=dtype,
                            id_offset=ID_OFFSET, block_nnz=7, command="test")
        if X.nnz:
            assert store.read_range(0, X.shape[1]).data is None
        return LinearFeatures(store)


# ------------------------------------------------------------ degree 2
class PolyContract(FeatureSpaceContract):
    data_kinds = ("valued", "signed", "binary")
    gamma, coef0 = 4.0, 0.5
    prune = True

    def make_space(self, X, y, *, dtype, tmp_path):
        store = InMemoryStore(X, y, dtype=dtype, id_offset=ID_OFFSET)
        return PolyFeatures(store, gamma=self.gamma, coef0=self.coef0, n_seed=2,
                            prune=self.prune)

    def expand(self, X, space):
        n, m = X.shape
        g, r = self.gamma, self.coef0
        cols, keys, ids = [], [], []
        for j in range(m):
            cols += [np.sqrt(2 * g * r) * X[:, j], g * X[:, j] ** 2]
            keys += [j * (m + 1), j * (m + 1) + j + 1]
            ids += [j + ID_OFFSET, [j + ID_OFFSET, j + ID_OFFSET]]
            for k in range(j + 1, m):
                cols.append(np.sqrt(2) * g * X[:, j] * X[:, k])
                keys.append(j * (m + 1) + k + 1)
                ids.append([j + ID_OFFSET, k + ID_OFFSET])
        return np.column_stack(cols), np.array(keys), ids

    def absent_ids(self, space):
        m = space.store.n_features
        return [m + ID_OFFSET, [ID_OFFSET, m + ID_OFFSET], [m + 3, m + 3],
                ID_OFFSET - 1]


class TestPolyPruned(PolyContract):
    prune = True


class TestPolyUnpruned(PolyContract):
    prune = False


# ------------------------------------------------------------ registry
@pytest.fixture
def store(rng):
    X = (rng.random((20, 6)) < 0.4) * rng.random((20, 6))
    y = np.where(rng.random(20) < 0.5, -1.0, 1.0)
    y[:2] = [-1, 1]
    return InMemoryStore(X, y)


def test_registry_holds_the_spaces():
    assert FEATURE_SPACES["linear"] is LinearFeatures
    assert FEATURE_SPACES["poly2"] is PolyFeatures
    assert (LinearFeatures.poly_degree, PolyFeatures.poly_degree) == (1, 2)


def test_make_feature_space_reads_poly(store):
    assert type(make_feature_space(store)) is LinearFeatures
    assert type(make_feature_space(store, poly=1, gamma=0.0)) is LinearFeatures
    poly = make_feature_space(store, poly=np.int64(2), gamma=3.0, coef0=0.0)
    assert type(poly) is PolyFeatures
    assert poly.spec() == {"kind": "poly2", "gamma": 3.0, "coef0": 0.0}
    for bad in (3, 0, "2", None, [2]):
        with pytest.raises(ParameterError, match=r"^poly must be one of 1, 2, got"):
            make_feature_space(store, poly=bad)
    with pytest.raises(ParameterError, match="gamma"):
        make_feature_space(store, poly=2, gamma=0.0)
    with pytest.raises(ParameterError, match="coef0"):
        make_feature_space(store, poly=2, coef0="x")


def test_feature_space_from_spec(store):
    assert type(feature_space_from_spec(store, {})) is LinearFeatures
    space = feature_space_from_spec(store, {"kind": "poly2", "gamma": 2, "coef0": 1})
    assert (space.gamma, space.coef0) == (2.0, 1.0)
    with pytest.raises(ParameterError) as info:
        feature_space_from_spec(store, {"kind": "sigmoid"})
    message = str(info.value)
    assert "\n" not in message and "'sigmoid'" in message \
        and ", ".join(sorted(FEATURE_SPACES)) in message
    with pytest.raises(ParameterError, match="lacks coef0"):
        feature_space_from_spec(store, {"kind": "poly2", "gamma": 2})
    with pytest.raises(ParameterError, match="of kind 'linear' given to 'poly2'"):
        PolyFeatures.from_spec(store, {"kind": "linear"})


def test_build_feature_space(store):
    space = build_feature_space(store, "poly2", gamma=2.0, prune=False, n_seed=3)
    assert (space.gamma, space.prune, space.n_seed) == (2.0, False, 3)
    assert space.spec() == {"kind": "poly2", "gamma": 2.0, "coef0": 1.0}
    with pytest.raises(ParameterError, match="takes no parameter 'gamma'"):
        build_feature_space(store, "linear", gamma=1.0)
    with pytest.raises(ParameterError,
                       match="registered: " + ", ".join(sorted(FEATURE_SPACES))):
        build_feature_space(store, "nope")


def test_register_feature_space_checks():
    class Toy(LinearFeatures):
        kind = "toy-test"

    try:
        assert register_feature_space(Toy) is Toy
        assert register_feature_space(Toy) is Toy            # idempotent
        assert FEATURE_SPACES["toy-test"] is Toy

        class Other(LinearFeatures):
            kind = "toy-test"

        with pytest.raises(ValueError, match="already registered"):
            register_feature_space(Other)
    finally:
        FEATURE_SPACES.pop("toy-test", None)

    class Abstract(FeatureSpace):
        kind = "abstract-test"

    class Nameless(LinearFeatures):
        kind = ""

    with pytest.raises(TypeError, match="abstract"):
        register_feature_space(Abstract)
    with pytest.raises(ValueError, match="non-empty"):
        register_feature_space(Nameless)
    with pytest.raises(TypeError):
        register_feature_space(int)
    assert "abstract-test" not in FEATURE_SPACES and "" not in FEATURE_SPACES


# ----------------------------------------------------------- key codec
def test_pair_keys_round_trip_and_order():
    m = 7
    codec = PairKeys(m)
    first, second = [], []
    for j in range(m):
        for k in [-1] + list(range(j, m)):
            first.append(j)
            second.append(k)
    keys = codec.encode(first, second)
    assert keys.dtype == np.int64
    np.testing.assert_array_equal(keys, np.array(first) * (m + 1) + np.array(second) + 1)
    assert np.all(np.diff(keys) > 0)                        # lexicographic order kept
    j, k = codec.decode(keys)
    np.testing.assert_array_equal(j, first)
    np.testing.assert_array_equal(k, second)
    np.testing.assert_array_equal(codec.linear(range(m)), keys[np.array(second) == -1])
    np.testing.assert_array_equal(codec.square(range(m)),
                                  keys[np.array(first) == np.array(second)])
    assert codec.n_keys == m * (m + 1) and keys.max() == codec.n_keys - 1


@pytest.mark.parametrize("m", [1, 5, 1000, 2**31 + 11, MAX_PAIR_FEATURES])
def test_kernel_pair_key_agrees_with_the_codec(m, rng):
    """kernels/poly.py keeps its own copy of the formula: both must agree."""
    codec = PairKeys(m)
    j = np.concatenate([[0, m - 1], rng.integers(0, m, 50)]).astype(np.int64)
    k = np.array([min(m - 1, a + int(rng.integers(0, 3))) for a in j])
    k[::4] = -1
    k[1::4] = j[1::4]
    expected = codec.encode(j, k)
    got = np.array([pair_key(np.int64(a), np.int64(b), np.int64(m))
                    for a, b in zip(j, k)], dtype=np.int64)
    np.testing.assert_array_equal(got, expected)
    back = codec.decode(expected)
    np.testing.assert_array_equal(back[0], j)
    np.testing.assert_array_equal(back[1], k)


def test_pair_keys_refuse_overflow_and_bad_pairs():
    big = MAX_PAIR_FEATURES
    assert big * (big + 1) + big <= np.iinfo(np.int64).max
    assert (big + 1) * (big + 2) + (big + 1) > np.iinfo(np.int64).max
    with pytest.raises(ParameterError, match=r"overflow int64 keys") as info:
        PairKeys(big + 1)
    assert "\n" not in str(info.value)
    with pytest.raises(ParameterError, match="overflow"):
        PolyFeatures(SimpleNamespace(n_features=big + 1))
    with pytest.raises(ParameterError):
        PairKeys(-1)
    codec = PairKeys(4)
    for j, k in ((4, -1), (-1, 2), (2, 1), (0, 4), (1, -2)):
        with pytest.raises(ParameterError, match="not a degree-2 candidate"):
            codec.encode([j], [k])
    for key in (-1, 20):
        with pytest.raises(ParameterError, match="outside"):
            codec.decode([key])


def test_poly_keys_of_refuses_absent_pairs(store):
    space = PolyFeatures(store)
    with pytest.raises(ParameterError):
        space.keys_of([[0, store.n_features]])
    np.testing.assert_array_equal(space.keys_of([[3, 1]]), space.keys_of([[1, 3]]))
