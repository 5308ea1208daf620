"""Node-granular GPU pool: where a job of g GPUs can go.

A job of at most one node goes on a single node, by the pool's ``placement``:
- ``best_fit`` (default): the node with the fewest free GPUs that still fits it, which keeps whole
  nodes free for large jobs;
- ``first_fit``: the lowest-indexed node with room, whatever it leaves (the classic bin-packing
  baseline; it fragments more: small jobs spread over nodes a later gang job needed whole).
A larger job takes
⌈g / gpus_per_node⌉ whole, fully free nodes (gang: all at once or not at all).

Ties are broken deterministically: among equally free nodes the lowest node index is taken (a
multi-node job takes the lowest-indexed whole free nodes), so a run never depends on hash or set
order. The nodes with each free count are a bit set (a Python int, bit n for node n), so the lowest
index is its lowest set bit, ``m & -m``: a few machine-word operations even for thousands of nodes.
The same masks answer "which nodes have at least g free" (``nodes_with``, ``largest_fit``) in
O(GPUs per node) bit counts, never a scan of every node: what backfilling asks on every pass.
"""

from __future__ import annotations

from collections.abc import Callable

# The node arithmetic is the plan's (one rule for the checks, the tables and the event loop).
from costsim.plan.options import nodes_needed

Allocation = tuple[tuple[int, int], ...]  # (node, GPUs taken on it)


class NodePool:
    """Free GPUs per node (``free``), and per free count the set of nodes with it as a bit mask."""

    def __init__(self, nodes: int, gpus_per_node: int, placement: str = "best_fit"):
        self.gpn = gpus_per_node
        self.free = [gpus_per_node] * nodes
        self.masks = [0] * (gpus_per_node + 1)  # masks[f]: bit n set iff node n has f free GPUs
        self.masks[gpus_per_node] = (1 << nodes) - 1
        self.free_gpus = nodes * gpus_per_node
        self.down: set[int] = set()
        # Take GPUs for a job, or None (nothing changed) if it does not fit now. Chosen once here,
        # so the per-start call has no extra branch.
        self.allocate: Callable[[int], Allocation | None]
        if placement == "first_fit":
            self.allocate = self._allocate_first_fit
        elif placement == "best_fit":
            self.allocate = self._allocate_best_fit
        else:
            raise ValueError(f"unknown placement {placement!r}")

    def _allocate_first_fit(self, gpus: int) -> Allocation | None:
        """``allocate`` under first fit: a job within a node takes the lowest-indexed node with room
        (the lowest set bit of the union of the masks of every free count that fits it)."""
        gpn = self.gpn
        if gpus > gpn or gpus > self.free_gpus:
            return self._gang(gpus) if gpus > gpn else None
        masks = self.masks
        m = 0
        for f in range(gpus, gpn + 1):
            m |= masks[f]
        if not m:
            return None
        low = m & -m
        node = low.bit_length() - 1
        f = self.free[node]
        masks[f] ^= low
        masks[f - gpus] |= low
        self.free[node] = f - gpus
        self.free_gpus -= gpus
        return ((node, gpus),)

    def _allocate_best_fit(self, gpus: int) -> Allocation | None:
        """``allocate`` under best fit: a job within a node takes the fullest node that still fits
        it, the lowest-indexed among equals."""
        if gpus > self.free_gpus:
            return None
        gpn, masks = self.gpn, self.masks
        if gpus <= gpn:
            for f in range(gpus, gpn + 1):  # best fit: the fullest node that still fits
                m = masks[f]
                if m:
                    low = m & -m  # the lowest-indexed such node
                    node = low.bit_length() - 1
                    masks[f] = m ^ low
                    left = f - gpus
                    masks[left] |= low
                    self.free[node] = left
                    self.free_gpus -= gpus
                    return ((node, gpus),)
            return None
        return self._gang(gpus)

    def _gang(self, gpus: int) -> Allocation | None:
        """A job wider than a node: ⌈gpus / per node⌉ whole free nodes, the lowest-indexed (both
        placements), or None."""
        if gpus > self.free_gpus:
            return None
        gpn, masks = self.gpn, self.masks
        k = nodes_needed(gpus, gpn)
        m = masks[gpn]
        if m.bit_count() < k:
            return None
        taken = []
        for _ in range(k):
            low = m & -m
            m ^= low
            masks[0] |= low
            node = low.bit_length() - 1
            self.free[node] = 0
            taken.append((node, gpn))
        masks[gpn] = m
        self.free_gpus -= k * gpn
        return tuple(taken)

    def largest_fit(self) -> int:
        """The most GPUs a job could take now (``allocate`` succeeds exactly for sizes up to it): the
        whole free nodes together if any node is wholly free (a wider job takes whole nodes), else the
        most free GPUs on one node. O(GPUs per node): the masks are scanned, not the nodes."""
        masks, gpn = self.masks, self.gpn
        whole = masks[gpn].bit_count()
        if whole:
            return whole * gpn
        for f in range(gpn - 1, 0, -1):
            if masks[f]:
                return f
        return 0

    def nodes_with(self, gpus: int) -> int:
        """How many nodes have at least ``gpus`` free (in service: a node under repair has none)."""
        masks = self.masks
        return sum(masks[f].bit_count() for f in range(gpus, self.gpn + 1))

    def _move(self, node: int, f: int) -> None:
        """Node ``node`` now has ``f`` free GPUs."""
        bit = 1 << node
        self.masks[self.free[node]] ^= bit
        self.masks[f] |= bit
        self.free[node] = f

    def is_down(self, node: int) -> bool:
        return node in self.down

    def down_node(self, node: int) -> None:
        """Take a node out of service: its free GPUs leave the pool; GPUs released on it stay out."""
        self.free_gpus -= self.free[node]
        self._move(node, 0)
        self.down.add(node)

    def up(self, node: int) -> None:
        """A repaired node returns with every GPU free (the jobs on it were killed when it failed)."""
        self.down.discard(node)
        self._move(node, self.gpn)
        self.free_gpus += self.gpn

    def release(self, alloc: Allocation) -> None:
        free, masks, down = self.free, self.masks, self.down
        for node, n in alloc:
            if node in down:
                continue
            f = free[node]
            bit = 1 << node
            masks[f] ^= bit
            masks[f + n] |= bit
            free[node] = f + n
            self.free_gpus += n
