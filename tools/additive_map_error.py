"""Measure the approximation error of the additive-kernel maps.

Usage::

    python tools/additive_map_error.py [--points 200] [--scan]

For each Vedaldi-Zisserman map (chi2, intersection, Jensen-Shannon; n = 5,
the step L of ``ultrafs.kernels.additive_maps.VZ_STEPS``) it evaluates the
map with the package's kernel (``expand_block_<map>`` on one column holding
the grid) and compares ``Psi(x)'Psi(z)`` with the exact kernel on the grid
x, z in G x G, G = the union of ``--points`` log-spaced and ``--points``
evenly spaced values in [1e-3, 1]; it prints the largest and mean absolute
and relative error.  For HIK (q = 100) it checks that ``phi(x)'phi(z)``
equals ``min(v_x, v_z) / q`` and prints the error of the quantised kernel
``min(v_x, v_z) s / q`` against ``min(x, z)`` for x, z in [0, s], s = 1
(4 * points + 1 evenly spaced values, 0 and s included, and ``--points``
log-spaced values in [1e-6 s, s]).

``--scan`` also prints, per VZ map, the largest relative error for a range
of steps L around the chosen one (how the steps were chosen).

The numbers are quoted in docs/ADDITIVE_KERNELS.md.
"""

from __future__ import annotations

import argparse

import numpy as np

from ultrafs.kernels import additive_maps as am


def exact_kernel(name, x, z):
    """The exact additive homogeneous kernel of two non-negative arrays."""
    if name == "chi2":
        return 2.0 * x * z / (x + z)
    if name == "intersection":
        return np.minimum(x, z)
    if name == "js":
        return (x / 2.0 * np.log2((x + z) / x) + z / 2.0 * np.log2((x + z) / z))
    raise ValueError(name)


def grid(points, low=1e-3, high=1.0):
    return np.unique(np.concatenate([np.geomspace(low, high, points),
                                     np.linspace(low, high, points)]))


def dense_map(name, values, scale=1.0):
    """The generated values of ``values`` (one column) by the package's kernel: (len, G)."""
    n = values.shape[0]
    indptr = np.array([0, n], dtype=np.int64)
    indices = np.arange(n, dtype=np.int32)
    g = am.N_GENERATED[name]
    out_indptr, out_indices, out_data = am.EXPAND_BLOCK[name](
        indptr, indices, values.astype(np.float64), np.array([scale]))
    phi = np.zeros((n, g))
    for l in range(g):
        lo, hi = out_indptr[l], out_indptr[l + 1]
        phi[out_indices[lo:hi], l] = out_data[lo:hi]
    return phi


def vz_errors(name, values):
    phi = dense_map(name, values)
    approx = phi @ phi.T
    X, Z = np.meshgrid(values, values, indexing="ij")
    exact = exact_kernel(name, X, Z)
    err = np.abs(approx - exact)
    rel = err / exact
    return {"max_abs": err.max(), "mean_abs": err.mean(), "max_rel": rel.max(),
            "mean_rel": rel.mean(), "pairs": err.size}


def vz_direct(name, values, step, order=am.VZ_ORDER):
    """The VZ map by its formula with any step (NumPy; for --scan)."""
    coef = am.vz_coefficients(name, order, step)
    lx = np.log(values)
    cols = [coef[0] * np.sqrt(values)]
    for k in range(1, order + 1):
        cols += [coef[k] * np.sqrt(values) * np.cos(k * step * lx),
                 coef[k] * np.sqrt(values) * np.sin(k * step * lx)]
    return np.stack(cols, axis=1)


def hik_errors(points, scale=1.0):
    q = am.HIK_LEVELS
    values = np.unique(np.concatenate([np.linspace(0.0, scale, 4 * points + 1),
                                       np.geomspace(1e-6 * scale, scale, points)]))
    phi = dense_map("hik", values, scale)
    levels = np.array([am.hik_level(v, scale) for v in values])
    gram = phi @ phi.T
    vmin = np.minimum.outer(levels, levels)
    identity = np.abs(gram - vmin / q).max()
    quantised = vmin * scale / q
    err = quantised - np.minimum.outer(values, values)
    return {"identity_max_abs": identity, "min_err": err.min(), "max_err": err.max(),
            "mean_err": err.mean(), "bound": scale / q, "pairs": err.size,
            "zero_level_of_positive": int(((values > 0) & (levels == 0)).sum())}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=200)
    parser.add_argument("--scan", action="store_true")
    args = parser.parse_args(argv)
    values = grid(args.points)
    print(f"grid: {values.size} values in [1e-3, 1] ({values.size ** 2} pairs)")
    print(f"{'map':<13}{'L':>7}{'max abs':>11}{'mean abs':>11}{'max rel':>11}"
          f"{'mean rel':>11}")
    for name in ("chi2", "intersection", "js"):
        e = vz_errors(name, values)
        print(f"{name:<13}{am.VZ_STEPS[name]:>7.3f}{e['max_abs']:>11.3e}"
              f"{e['mean_abs']:>11.3e}{e['max_rel']:>11.3e}{e['mean_rel']:>11.3e}")
    h = hik_errors(args.points)
    print(f"hik (q = {am.HIK_LEVELS}, s = 1): |phi(x)'phi(z) - min(v_x, v_z)/q| <= "
          f"{h['identity_max_abs']:.1e}; quantised - exact in "
          f"[{h['min_err']:.3e}, {h['max_err']:.17g}] (bound s/q = {h['bound']:.3e}), "
          f"mean {h['mean_err']:.3e} over {h['pairs']} pairs; positive values at "
          f"level 0: {h['zero_level_of_positive']}")
    if args.scan:
        X, Z = np.meshgrid(values, values, indexing="ij")
        for name in ("chi2", "intersection", "js"):
            exact = exact_kernel(name, X, Z)
            chosen = am.VZ_STEPS[name]
            rows = []
            for step in np.round(np.arange(chosen - 0.03, chosen + 0.0301, 0.005), 4):
                phi = vz_direct(name, values, step)
                err = np.abs(phi @ phi.T - exact)
                rows.append(f"{step:.3f}:{(err / exact).max():.4f}")
            print(f"scan {name} (L: max rel): " + " ".join(rows))


if __name__ == "__main__":
    main()
