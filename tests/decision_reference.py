"""Brute force for the decisions of :mod:`hseval.metrics.decisions`: every node's probability as a
sum over its classes, every metric of a node against every class from the ancestor sets
themselves, every rule by its definition over all nodes, and the operating curve by decoding at
each threshold. Slow and plain on purpose (loops over nodes and classes, O(|N|·|L|)); the tests
compare the fast code with it on small random trees."""

from __future__ import annotations

import math

import numpy as np

from hseval.tree.hierarchy import Hierarchy

ROOT = -1


class Reference:
    """A tree seen as explicit sets: ``nodes`` (every node, the root as -1), ``ancestors[n]`` (the
    non-root ancestors-or-self of n) and ``leaves[n]`` (the classes under n)."""

    def __init__(self, tree: Hierarchy) -> None:
        self.tree = tree
        self.L = tree.num_leaves
        self.nodes = [*range(tree.num_nodes), ROOT]
        self.ancestors = {n: set(tree.path(n)) for n in range(tree.num_nodes)} | {ROOT: set()}
        self.leaves = {n: {l for l in range(self.L) if n in self.ancestors[l]} for n in range(tree.num_nodes)}
        self.leaves[ROOT] = set(range(self.L))
        self.depth = {n: len(self.ancestors[n]) for n in self.nodes}

    def info(self, n: int) -> float:
        return math.log(self.L) - math.log(len(self.leaves[n]))

    def lca(self, a: int, b: int) -> int:
        common = self.ancestors[a] & self.ancestors[b]
        return max(common, key=lambda n: self.depth[n]) if common else ROOT

    def p(self, probs: np.ndarray, n: int) -> float:
        return 1.0 if n == ROOT else float(sum(probs[l] for l in self.leaves[n]))

    # ------------------------------------------------------------------ metrics of one node for one class
    def metric(self, name: str, n: int, l: int) -> float:
        a = self.lca(n, l)
        dn, dl, da = self.depth[n], self.depth[l], self.depth[a]
        if name == "correct":
            return float(a == n)
        if name == "exact":
            return float(n == l)
        if name == "depth_precision":
            return 1.0 if dn == 0 else da / dn
        if name == "depth_recall":
            return da / dl
        if name == "info_precision":
            return 1.0 if self.info(n) == 0 else self.info(a) / self.info(n)
        if name == "info_recall":
            return 1.0 if self.info(l) == 0 else self.info(a) / self.info(l)
        if name.startswith("hf"):
            beta = 1.0 if name == "hf1" else float(name.split(":")[1])
            shared = len(self.ancestors[n] & self.ancestors[l])
            if not shared:
                return 0.0
            precision, recall = shared / len(self.ancestors[n]), shared / len(self.ancestors[l])
            return (1 + beta**2) * precision * recall / (beta**2 * precision + recall)
        if name == "tree_distance":
            return float(len(self.ancestors[n] ^ self.ancestors[l]))
        if name == "mistake_severity":
            return float(self.tree.max_depth - da)
        if name == "wu_palmer":
            return 2 * (da + 1) / ((dn + 1) + (dl + 1))
        raise KeyError(name)

    def expected(self, name: str, probs: np.ndarray, n: int) -> float:
        return float(sum(probs[l] * self.metric(name, n, l) for l in range(self.L)))

    # ------------------------------------------------------------------ rules by their definitions
    def _best(self, candidates, key) -> int:
        """The candidate of the largest key, ties to the deeper node, then to the lower index."""
        return max(candidates, key=lambda n: (key(n), self.depth[n], -(n if n >= 0 else 10**9)))

    def optimal(self, name: str, probs: np.ndarray, lower: bool = False) -> tuple[int, dict[int, float]]:
        values = {n: self.expected(name, probs, n) for n in self.nodes}
        return self._best(self.nodes, lambda n: -values[n] if lower else values[n]), values

    def threshold(self, probs: np.ndarray, t: float) -> int:
        eligible = [n for n in self.nodes if self.p(probs, n) >= t]
        return self._best(eligible, lambda n: (self.depth[n], self.p(probs, n)))

    def info_threshold(self, probs: np.ndarray, t: float) -> int:
        eligible = [n for n in self.nodes if self.p(probs, n) >= t]
        return self._best(eligible, lambda n: (-len(self.leaves[n]), self.p(probs, n)))

    def children(self, n: int) -> list[int]:
        return list(self.tree.children[n])

    def top_down(self, probs: np.ndarray) -> int:
        node = ROOT
        while node == ROOT or node >= self.L:
            kids = self.children(node)
            node = max(kids, key=lambda c: (self.p(probs, c), -c))
        return node

    def plurality(self, probs: np.ndarray) -> int:
        seconds = [sorted(self.p(probs, c) for c in self.children(n))[-2] for n in self.nodes
                   if n < 0 or n >= self.L if len(self.children(n)) > 1]
        tau = max(seconds) if seconds else -math.inf
        eligible = [n for n in self.nodes if n == ROOT or self.p(probs, n) > tau]
        return self._best(eligible, lambda n: 0)

    def crm(self, probs: np.ndarray) -> int:
        H = self.tree.max_depth
        risk = [sum(probs[j] * (0 if j == k else H - self.depth[self.lca(k, j)]) for j in range(self.L))
                for k in range(self.L)]
        least = min(risk)
        return min(k for k in range(self.L) if risk[k] == least)

    def decode(self, rule: str, probs: np.ndarray) -> int:
        kind, _, parameter = rule.partition(":")
        if kind == "leaf":
            return int(np.argmax(probs))
        if kind == "threshold":
            return self.threshold(probs, float(parameter))
        if kind == "info-threshold":
            return self.info_threshold(probs, float(parameter))
        return {"top-down": self.top_down, "plurality": self.plurality, "crm": self.crm}[kind](probs)
