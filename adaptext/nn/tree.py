"""The batched tree engine: composition over binary constituency trees, one tree height at
a time across the whole batch (never one node at a time in Python).

Cells (``TreeCell``), each applied to the M nodes of one level at once:

- ``recnn``: Socher et al.'s recursive network, Shen et al. (2019) Eq. 6,
  ``h = tanh(U [h_l; h_r] + W x + b)``;
- ``treelstm``: Tai et al. (2015)'s binary (N-ary, N = 2) constituency Tree-LSTM, Eqs. 10-12,
  with one forget gate per child: gates i, f_l, f_r, o and candidate u from
  ``W x + U [h_l; h_r] + b``; ``c = i*u + f_l*c_l + f_r*c_r``; ``h = o*tanh(c)``.

``x`` is the word vector at a leaf (a leaf is the cell with no children, as in Tai et al.'s
equations with h_l = h_r = c_l = c_r = 0). Inner nodes have no word of their own; with the
head-word gate (Shen et al. Eqs. 17-18) they get one, a gated mix of their children's head
words, ``x = g*x_l + (1-g)*x_r`` with ``g = sigmoid(W_g [s_l; s_r] + b_g)`` (s: the children's
hyper states, which carry their tags, or main states in a model without a hypernetwork).

Hypernetwork (TG-HRecNN Eqs. 7-9, TG-HTreeLSTM Eqs. 13-16): a small cell of the same kind
runs over the same tree on ``x_hat``, the fusion of the node's tag embedding and its word
(leaf) or head word (inner node): ``concat`` (Eq. 19) ``x_hat = tanh(W_f [e_tag; x] + b_f)``
or ``multi`` (Eq. 21) ``x_hat = tanh(W_t e_tag + b_t) * tanh(W_x x + b_x)``. Its state
``h_hat`` gives ``z_w, z_u, z_b = W_z h_hat + b_z`` and, as in Ha et al.'s HyperLSTM, the main
cell's pre-activations become ``d_w(z_w) * (W x) + d_u(z_u) * (U [h_l; h_r]) + d_b(z_b)``: every
row of W and U is scaled per node, and the bias is generated per node.

States live in one tensor per level, ``[main state | hyper state | head word]``; a node's
children are gathered with one ``index_select`` from the levels below (a concatenation that
grows by one level per step), so autograd sees only out-of-place ops.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

CELLS = ("recnn", "treelstm")
FUSIONS = ("concat", "multi")
GATES = {"recnn": ("h",), "treelstm": ("i", "o", "u", "f_l", "f_r")}   # leaves use the first 3 (no children)


def dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """Inverted dropout with a mask from ``rand`` (on CPU about 3x faster than ``F.dropout``'s
    Bernoulli sampling, which showed up as 17% of a Tree-LSTM training step)."""
    if not training or p <= 0:
        return x
    if p >= 1:
        return x * 0
    return x * ((torch.rand_like(x) >= p).to(x.dtype) * (1.0 / (1.0 - p)))


class Dropout(nn.Module):
    def __init__(self, p: float):
        super().__init__()
        self.p = p

    def forward(self, x):
        return dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class TreeCell(nn.Module):
    """One composition step for M nodes at once; ``z=(z_w, z_u, z_b)`` makes it a hyper cell."""

    def __init__(self, kind: str, in_dim: int, hidden: int, z_dim: int = 0, recurrent_dropout: float = 0.0):
        super().__init__()
        if kind not in CELLS:
            raise ValueError(f"cell must be one of {', '.join(CELLS)}, not {kind!r}")
        self.kind, self.in_dim, self.hidden, self.z_dim = kind, in_dim, hidden, z_dim
        self.gates = GATES[kind]
        rows = len(self.gates) * hidden
        self.W = nn.Linear(in_dim, rows, bias=False)          # word / head-word input
        self.U = nn.Linear(2 * hidden, rows, bias=False)      # children [h_l; h_r]
        self.recurrent_dropout = recurrent_dropout
        if z_dim:
            # d_w, d_u: per-row scales of W and U (bias 1: start as the plain cell); d_b: the bias
            self.d_w, self.d_u, self.d_b = (nn.Linear(z_dim, rows) for _ in range(3))
            for d in (self.d_w, self.d_u):
                nn.init.normal_(d.weight, std=0.1 / math.sqrt(z_dim))
                nn.init.ones_(d.bias)
            nn.init.normal_(self.d_b.weight, std=0.1 / math.sqrt(z_dim))
            nn.init.zeros_(self.d_b.bias)
        else:
            self.b = nn.Parameter(torch.zeros(rows))

    @property
    def state_dim(self) -> int:
        return self.hidden * (1 if self.kind == "recnn" else 2)   # [h] or [h, c]

    def forward(self, x, left=None, right=None, z=None) -> torch.Tensor:
        """x [M, in] or None; left/right: children states [M, state_dim] (None at leaves);
        z: (z_w, z_u, z_b) each [M, z_dim]. Returns the new states [M, state_dim]."""
        H = self.hidden
        # a leaf has no children, so no forget gates: only the rows of i, o, u are computed
        r = 3 * H if (left is None and self.kind == "treelstm") else None

        def rows(layer, v):
            if r is None:
                return layer(v)
            return F.linear(v, layer.weight[:r], None if layer.bias is None else layer.bias[:r])

        if z is not None:
            pre = rows(self.d_b, z[2])                               # Eq. 9 / 15: generated bias
        else:
            pre = self.b if r is None else self.b[:r]
        if x is not None:
            wx = rows(self.W, x)                                     # [M, G*H]
            pre = pre + (rows(self.d_w, z[0]) * wx if z is not None else wx)
        if left is not None:
            hh = torch.cat([left[:, :H], right[:, :H]], dim=1)       # [M, 2H]
            if self.kind == "recnn":
                hh = dropout(hh, self.recurrent_dropout, self.training)
            uh = self.U(hh)
            pre = pre + (self.d_u(z[1]) * uh if z is not None else uh)
        if self.kind == "recnn":
            return torch.tanh(pre)                                   # Eq. 6
        gates = pre.split(H, dim=1)                                  # Eq. 10-11: i, o, u (, f_l, f_r)
        u = dropout(torch.tanh(gates[2]), self.recurrent_dropout, self.training)   # dropout without memory loss
        c = torch.sigmoid(gates[0]) * u
        if left is not None:
            c = c + torch.sigmoid(gates[3]) * left[:, H:] + torch.sigmoid(gates[4]) * right[:, H:]   # Eq. 12
        o = gates[1]
        h = torch.sigmoid(o) * torch.tanh(c)
        return torch.cat([h, c], dim=1)


class Fusion(nn.Module):
    """Information fusion of a tag embedding and a (head) word vector into the hyper input."""

    def __init__(self, mode: str, tag_dim: int, word_dim: int, out_dim: int):
        super().__init__()
        if mode not in FUSIONS:
            raise ValueError(f"fusion must be one of {', '.join(FUSIONS)}, not {mode!r}")
        self.mode = mode
        if mode == "concat":
            self.proj = nn.Linear(tag_dim + word_dim, out_dim)       # Eq. 19
        else:
            self.tag, self.word = nn.Linear(tag_dim, out_dim), nn.Linear(word_dim, out_dim)   # Eq. 21

    def forward(self, t: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        if self.mode == "concat":
            return torch.tanh(self.proj(torch.cat([t, x], dim=1)))
        return torch.tanh(self.tag(t)) * torch.tanh(self.word(x))


class HeadGate(nn.Module):
    """Eqs. 17-18: an inner node's head word, ``g*x_l + (1-g)*x_r``, g from the children's states."""

    def __init__(self, state_dim: int, word_dim: int):
        super().__init__()
        self.gate = nn.Linear(2 * state_dim, word_dim)

    def forward(self, s_l, s_r, x_l, x_r) -> torch.Tensor:
        g = torch.sigmoid(self.gate(torch.cat([s_l, s_r], dim=1)))
        return g * x_l + (1 - g) * x_r


class TreeEncoder(nn.Module):
    """RecNN / Tree-LSTM over a ``TreeBatch``, optionally tag-guided by a hypernetwork.

    ``forward(x, tags, tree)``: x [N, word_dim] word vectors of every node (only leaves are
    read) or [L, word_dim] of the leaves only, in ``tree.levels[0]`` order; tags [N, tag_dim]
    tag embeddings (hyper models) or None. Returns ``{"h": [N, hidden]}``
    in node order, plus ``z_w, z_u, z_b`` [N, z_dim] for hyper models and ``head`` [N, word_dim]
    (the head word vectors) with the head gate.
    """

    def __init__(self, cell: str, word_dim: int, hidden: int, *, hyper: bool = False, tag_dim: int = 50,
                 hyper_hidden: int = 50, hyper_input: int = 100, z_dim: int = 16, fusion: str = "concat",
                 head_gate: bool = False, recurrent_dropout: float = 0.0):
        super().__init__()
        self.kind, self.word_dim, self.hidden, self.hyper, self.head_gate = cell, word_dim, hidden, hyper, head_gate
        self.cell = TreeCell(cell, word_dim, hidden, z_dim if hyper else 0, recurrent_dropout)
        gate_dim = hidden
        if hyper:
            self.fusion = Fusion(fusion, tag_dim, word_dim, hyper_input)
            self.hyper_cell = TreeCell(cell, hyper_input, hyper_hidden, 0, recurrent_dropout)
            self.z = nn.Linear(hyper_hidden, 3 * z_dim)              # Eq. 8 / 14: z_w, z_u, z_b
            self.z_dim, gate_dim = z_dim, hyper_hidden
        if head_gate:
            self.gate = HeadGate(gate_dim, word_dim)
        self.main_dim = self.cell.state_dim
        self.hyp_dim = self.hyper_cell.state_dim if hyper else 0

    @property
    def out_dim(self) -> int:
        return self.hidden

    def _z(self, hyp_state):
        return self.z(hyp_state[:, :self.hyper_cell.hidden]).chunk(3, dim=1)

    def _step(self, x, tags, left=None, right=None):
        """Compose one level: x [M, word_dim] (leaves) or None; left/right: children's packed
        states. Returns (packed states [M, S], z or None)."""
        m, hd = self.main_dim, self.hyp_dim
        if left is not None:
            if self.head_gate:
                s = slice(m, m + self.hyper_cell.hidden) if self.hyper else slice(0, self.hidden)
                x = self.gate(left[:, s], right[:, s], left[:, m + hd:], right[:, m + hd:])   # Eqs. 17-18
            else:
                x = None
        parts, z = [], None
        if self.hyper:
            xw = x if x is not None else tags.new_zeros(tags.shape[0], self.word_dim)
            x_hat = self.fusion(tags, xw)                                                 # Eq. 19 / 21
            hyp = self.hyper_cell(x_hat, None if left is None else left[:, m:m + hd],
                                  None if right is None else right[:, m:m + hd])           # Eq. 7 / 13
            z = self._z(hyp)
        main = self.cell(x, None if left is None else left[:, :m], None if right is None else right[:, :m], z)
        parts.append(main)                                                                # Eq. 9 / 15-16
        if self.hyper:
            parts.append(hyp)
        if self.head_gate:
            parts.append(x)
        return torch.cat(parts, dim=1) if len(parts) > 1 else parts[0], z

    def forward(self, x: torch.Tensor, tags: torch.Tensor | None, tree) -> dict:
        if self.hyper and tags is None:
            raise ValueError("a tag-guided encoder needs tag embeddings")
        plan = level_plan(tree)
        L = len(plan.nodes)
        # inbox[h]: chunks of lower levels holding children of level h
        inbox: list[list[torch.Tensor]] = [[] for _ in range(L)]
        outs, zs = [], []
        for h in range(L):
            idx = plan.nodes[h]
            t = None if tags is None else tags.index_select(0, idx)
            if h == 0:
                xl = x.index_select(0, idx) if x.shape[0] == tree.num_nodes else x.index_select(0, plan.leaf_order)
                new, z = self._step(xl, t)
            else:
                m = idx.numel()
                src = inbox[h]
                ch = (torch.cat(src) if len(src) > 1 else src[0]).index_select(0, plan.gather[h])   # [2M, S]
                new, z = self._step(None, t, ch[:m], ch[m:])
            outs.append(new)
            zs.append(z)
            # hand each parent level its children: level h is ordered by parent height, so
            # they are contiguous chunks (split's backward is one concatenation, O(level size))
            for k, chunk in zip(plan.parent_levels[h], new.split(plan.chunk_sizes[h])):
                if k < L:
                    inbox[k].append(chunk)
        states = torch.cat(outs).index_select(0, plan.pos)               # back to node order
        out = {"h": states[:, :self.hidden]}
        if self.kind == "treelstm":
            out["c"] = states[:, self.hidden:self.main_dim]
        if self.hyper:
            for k, name in enumerate(("z_w", "z_u", "z_b")):
                out[name] = torch.cat([zz[k] for zz in zs]).index_select(0, plan.pos)
        if self.head_gate:
            out["head"] = states[:, self.main_dim + self.hyp_dim:]
        return out


class LevelPlan:
    """Index bookkeeping of one ``TreeBatch`` for the engine (no tensors that need grad).

    ``nodes[h]``: the node ids of height h, ordered by (parent's height, parent's rank in its
    level, left/right), computed top-down. So the children that level h hands to each parent
    level form one contiguous chunk (``chunk_sizes[h]`` for ``parent_levels[h]``; the last
    parent level, ``len(nodes)``, stands for "no parent": the roots), and a level's inputs are
    the concatenation of the chunks addressed to it, permuted by ``gather[h]`` into left
    children then right children. Every gather and its backward touch only the rows involved,
    never the whole batch, so a batch costs O(nodes) rather than O(nodes x height).
    ``pos``: node id -> row of the level-ordered concatenation of all levels.
    """

    def __init__(self, tree):
        levels = tree.levels
        L, N = len(levels), tree.num_nodes
        left, right = tree.left, tree.right
        dev = left.device
        height = torch.empty(N, dtype=torch.long, device=dev)
        for h, idx in enumerate(levels):
            height[idx] = h
        parent = torch.full((N,), -1, dtype=torch.long, device=dev)
        side = torch.zeros(N, dtype=torch.long, device=dev)
        inner = (left >= 0).nonzero().flatten()
        parent[left[inner]] = inner
        parent[right[inner]] = inner
        side[right[inner]] = 1
        has_parent = parent >= 0
        safe_parent = parent.clamp(min=0)
        p_height = torch.where(has_parent, height[safe_parent], torch.full_like(height, L))
        rank = torch.zeros(N, dtype=torch.long, device=dev)
        self.nodes = [None] * L
        for h in range(L - 1, -1, -1):                   # top-down: parents are ranked first
            idx = levels[h]
            p_rank = torch.where(has_parent[idx], rank[safe_parent[idx]], 0)
            key = (p_height[idx] * (N + 1) + p_rank) * 2 + side[idx]
            nodes = idx[torch.sort(key, stable=True).indices]
            self.nodes[h] = nodes
            rank[nodes] = torch.arange(nodes.numel(), device=dev)
        self.parent_levels, self.chunk_sizes = [], []
        inbox = [[] for _ in range(L + 1)]                # node ids of the chunks addressed to each level
        for h in range(L):
            counts = torch.bincount(p_height[self.nodes[h]] - h - 1, minlength=L - h).tolist()
            ks, sizes, start = [], [], 0
            for k, c in enumerate(counts):
                if c:
                    ks.append(h + 1 + k)
                    sizes.append(c)
                    inbox[h + 1 + k].append(self.nodes[h][start:start + c])
                    start += c
            self.parent_levels.append(ks)
            self.chunk_sizes.append(sizes)
        self.gather = [None] * L
        for h in range(1, L):
            m = self.nodes[h].numel()
            rows = torch.cat(inbox[h])
            perm = torch.empty(2 * m, dtype=torch.long, device=dev)
            perm[side[rows] * m + rank[parent[rows]]] = torch.arange(2 * m, device=dev)
            self.gather[h] = perm
        # x may come for the leaves only, in ``levels[0]`` order: its rows in ``nodes[0]`` order
        where = torch.empty(N, dtype=torch.long, device=dev)
        where[levels[0]] = torch.arange(levels[0].numel(), device=dev)
        self.leaf_order = where[self.nodes[0]]
        order = torch.cat(self.nodes)
        self.pos = torch.empty_like(order)
        self.pos[order] = torch.arange(order.numel(), device=dev)


def level_plan(tree) -> LevelPlan:
    plan = getattr(tree, "_level_plan", None)
    if plan is None or plan.pos.device != tree.left.device or plan.pos.numel() != tree.num_nodes:
        plan = LevelPlan(tree)
        try:
            tree._level_plan = plan          # both trees of a pair, or a second pass, reuse it
        except AttributeError:
            pass
    return plan
