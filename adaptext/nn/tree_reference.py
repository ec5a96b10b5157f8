"""A recursive, one-node-at-a-time reference of ``adaptext.nn.tree.TreeEncoder``, for tests and
benchmarks only (models never use it).

It reads the encoder's parameters and writes each equation out per node with matrix-vector
products (the usual recursive implementation, as in Tai et al.'s code: one cell call per node,
recursing from each root in plain Python). It is independent of the batched engine's level
ordering, packing and gathering, and it is the baseline of ``benchmarks/tree_speed.py``.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F


def _lin(layer, v):
    out = layer.weight @ v
    return out + layer.bias if layer.bias is not None else out


def _cell(cell, x, kids, z):
    """One node: x [in] or None, kids ((h_l, c_l), (h_r, c_r)) or None, z (z_w, z_u, z_b) or None."""
    H = cell.hidden
    hh = None
    if kids is not None:
        hh = torch.cat([kids[0][0], kids[1][0]])
        if cell.kind == "recnn":
            hh = F.dropout(hh, cell.recurrent_dropout, cell.training)
    # one pre-activation vector per node, [G*H], then one slice per gate (Eqs. 6 / 10-11)
    if z is not None:
        v = _lin(cell.d_b, z[2])
        if x is not None:
            v = v + _lin(cell.d_w, z[0]) * (cell.W.weight @ x)
        if hh is not None:
            v = v + _lin(cell.d_u, z[1]) * (cell.U.weight @ hh)
    else:
        v = cell.b
        if x is not None:
            v = v + cell.W.weight @ x
        if hh is not None:
            v = v + cell.U.weight @ hh
    a = dict(zip(cell.gates, v.split(H)))
    if cell.kind == "recnn":
        return torch.tanh(a["h"]), None
    u = F.dropout(torch.tanh(a["u"]), cell.recurrent_dropout, cell.training)
    c = torch.sigmoid(a["i"]) * u
    if kids is not None:
        c = c + torch.sigmoid(a["f_l"]) * kids[0][1] + torch.sigmoid(a["f_r"]) * kids[1][1]
    return torch.sigmoid(a["o"]) * torch.tanh(c), c


def recursive_encode(enc, x: torch.Tensor, tags: torch.Tensor | None, tree) -> dict:
    """The same outputs as ``enc(x, tags, tree)`` (``h`` and, for hyper encoders, ``z_u``),
    computed by recursion over each tree of the ``TreeBatch``, one node at a time."""
    left, right = tree.left.tolist(), tree.right.tolist()
    n = len(left)
    xs = x.unbind(0)                     # per-node rows (one backward op, not one per leaf)
    ts = tags.unbind(0) if tags is not None else None
    h_out: list[torch.Tensor | None] = [None] * n      # every node is visited from its root
    z_out: list[torch.Tensor | None] = [None] * n

    def visit(j):
        """-> (main (h, c), hyper (h, c) or None, head word or None)."""
        l, r = left[j], right[j]
        if l < 0:
            kids, xj = None, xs[j]
        else:
            kl, kr = visit(l), visit(r)
            kids = (kl, kr)
            xj = None
            if enc.head_gate:
                s_l, s_r = (kl[1][0], kr[1][0]) if enc.hyper else (kl[0][0], kr[0][0])
                g = torch.sigmoid(_lin(enc.gate.gate, torch.cat([s_l, s_r])))
                xj = g * kl[2] + (1 - g) * kr[2]
        z = hyp = None
        if enc.hyper:
            t = ts[j]
            xw = xj if xj is not None else torch.zeros(enc.word_dim, dtype=xs[0].dtype)
            f = enc.fusion
            if f.mode == "concat":
                x_hat = torch.tanh(_lin(f.proj, torch.cat([t, xw])))
            else:
                x_hat = torch.tanh(_lin(f.tag, t)) * torch.tanh(_lin(f.word, xw))
            hyp = _cell(enc.hyper_cell, x_hat, None if kids is None else (kids[0][1], kids[1][1]), None)
            Z = enc.z_dim
            zz = _lin(enc.z, hyp[0])
            z = (zz[:Z], zz[Z:2 * Z], zz[2 * Z:])
            z_out[j] = z[1]
        main = _cell(enc.cell, xj, None if kids is None else (kids[0][0], kids[1][0]), z)
        h_out[j] = main[0]
        return main, hyp, xj

    for root in tree.roots.tolist():
        visit(root)
    out = {"h": _stacked(h_out)}
    if enc.hyper:
        out["z_u"] = _stacked(z_out)
    return out


def _stacked(rows: list[torch.Tensor | None]) -> torch.Tensor:
    """The rows of all nodes, each set by the visit from its tree's root."""
    done = [r for r in rows if r is not None]
    assert len(done) == len(rows), "every node lies under a root"
    return torch.stack(done)
