"""Node-granular GPU pool: where a job of g GPUs can go.

A job of at most one node goes on a single node, best fit (the node with the fewest free GPUs
that still fits it, which keeps whole nodes free for large jobs). A larger job takes
⌈g / gpus_per_node⌉ whole, fully free nodes (gang: all at once or not at all).
"""

from __future__ import annotations

Allocation = tuple[tuple[int, int], ...]  # (node, GPUs taken on it)


def nodes_needed(gpus, gpus_per_node: int):
    """Whole nodes (or cloud instances) a job of ``gpus`` needs: ⌈gpus / per node⌉; arrays too."""
    return -(-gpus // gpus_per_node)


def held_gpus(gpus: int, gpus_per_node: int) -> int:
    """GPUs a job actually holds: itself within a node, whole nodes beyond."""
    return gpus if gpus <= gpus_per_node else nodes_needed(gpus, gpus_per_node) * gpus_per_node


class NodePool:
    """Free GPUs per node, indexed by free count so a fit is found in O(gpus_per_node)."""

    def __init__(self, nodes: int, gpus_per_node: int):
        self.gpn = gpus_per_node
        self.free = [gpus_per_node] * nodes
        self.by_free: list[set[int]] = [set() for _ in range(gpus_per_node + 1)]
        self.by_free[gpus_per_node] = set(range(nodes))
        self.free_gpus = nodes * gpus_per_node
        self.down: set[int] = set()

    def allocate(self, gpus: int) -> Allocation | None:
        """Take GPUs for a job, or None (nothing changed) if it does not fit now."""
        if gpus > self.free_gpus:
            return None
        gpn = self.gpn
        by_free = self.by_free
        if gpus <= gpn:
            for f in range(gpus, gpn + 1):
                bucket = by_free[f]
                if bucket:
                    node = bucket.pop()
                    left = f - gpus
                    self.free[node] = left
                    by_free[left].add(node)
                    self.free_gpus -= gpus
                    return ((node, gpus),)
            return None
        k = nodes_needed(gpus, gpn)
        whole = by_free[gpn]
        if len(whole) < k:
            return None
        taken = tuple((whole.pop(), gpn) for _ in range(k))
        for node, _ in taken:
            self.free[node] = 0
            by_free[0].add(node)
        self.free_gpus -= k * gpn
        return taken

    def is_down(self, node: int) -> bool:
        return node in self.down

    def down_node(self, node: int) -> None:
        """Take a node out of service: its free GPUs leave the pool; GPUs released on it stay out."""
        self.by_free[self.free[node]].discard(node)
        self.free_gpus -= self.free[node]
        self.free[node] = 0
        self.down.add(node)

    def up(self, node: int) -> None:
        """A repaired node returns with every GPU free (the jobs on it were killed when it failed)."""
        self.down.discard(node)
        self.free[node] = self.gpn
        self.by_free[self.gpn].add(node)
        self.free_gpus += self.gpn

    def release(self, alloc: Allocation) -> None:
        for node, n in alloc:
            if node in self.down:
                continue
            f = self.free[node]
            self.by_free[f].discard(node)
            self.free[node] = f + n
            self.by_free[f + n].add(node)
            self.free_gpus += n


