"""Embeddings page: the 2-D projections that ``hseval evaluate`` computed (PCA, t-SNE, UMAP),
coloured by class, by a super-class level or by correct/wrong (the same colours in every run),
with the class vectors overlaid; a node of the tree can be highlighted, its nearest class vectors
listed, and points selected on the scatter show their images."""

from __future__ import annotations

import streamlit as st

from hseval.app import loading
from hseval.app.neighbours import nearest_nodes
from hseval.app.selection import selected_rows
from hseval.app.state import PageContext, context
from hseval.app.tables import node_paths
from hseval.app.views.common import chart, needs_runs, page_title, pick, pick_node, pick_run, shows_problems
from hseval.app.views.sample_grid import show_samples
from hseval.io.results import RunResult
from hseval.reporting import charts
from hseval.reporting import colours as projection_colours
from hseval.reporting.columns import level_label
from hseval.reporting.escape import markdown

COLOURS = {"label": "class", "correct": "correct / wrong"}
NONE = "(none)"
NEIGHBOURS = 5


def render(ctx: PageContext) -> None:
    page_title(ctx, "Embeddings")
    if not needs_runs(ctx):
        return
    top = st.columns(4)
    run = pick_run("Run", ctx.runs, key="embeddings_run", container=top[0])
    with shows_problems():
        points = run.projections
        if points.empty:
            reason = run.unavailable.get("projections")
            st.info(f"{run.name} has no projections: {reason}." if reason else
                    f"{run.name} has no projections: evaluate with 'hseval evaluate --projections pca,tsne'.")
            return
        tree = run.hierarchy
        methods = list(dict.fromkeys(points["method"].astype(str)))
        method = pick("Projection", methods, key="embeddings_method", container=top[1],
                      format_func=lambda m: charts.METHOD_NAMES.get(m, m))
        levels = sorted(c for c in points.columns if c.startswith("level"))
        options = {**{c: f"super-class, {level_label(int(c[5:]), tree)}" for c in levels}, **COLOURS}
        colour = top[2].selectbox("Colour by", list(options), format_func=options.get, key="embeddings_colour")
        paths = node_paths(tree)
        picked = pick_node("Highlight", {NONE: -1, **paths}, key="embeddings_highlight", container=top[3],
                           help="Draw the samples under this class or super-class in colour (and name its class "
                                "vectors); fade the others.")
        highlight = None if picked < 0 else tree.node_names[picked]
        chosen_path = None if picked < 0 else st.session_state["embeddings_highlight"]
        chosen = points[points["method"].astype(str) == method].reset_index(drop=True)
        has_vectors = bool((chosen["kind"] == "class_vector").any()) if "kind" in chosen else False
        vectors = has_vectors and st.toggle("Show class vectors", value=True, key="embeddings_vectors")
        chosen = charts.with_predictions(chosen, tree, run.topk)
        event = chart(
            charts.projection_scatter(chosen, color=colour, show_vectors=vectors, tree=tree, highlight=highlight,
                                      title=f"{run.name}: {charts.METHOD_NAMES.get(method, method)} of the embeddings"),
            key="embeddings_scatter", on_select="rerun", selection_mode=("points", "box", "lasso"))
        st.caption(_caption(chosen, colour, highlight))
        rows = selected_rows(event.selection if event else None, chosen)
        if len(rows):
            show_samples(run, rows)
        else:
            st.caption("Select points on the scatter (click, box or lasso) to see their images and predictions: "
                       "a plotly hover cannot show an image.")
        _neighbours(run, chosen_path if highlight else None, paths)


def _caption(chosen, colour: str, highlight: str | None) -> str:
    samples = chosen[chosen["kind"] == "sample"]
    text = f"{len(samples):,} samples (a stratified sample of the split)"
    shallow = int((projection_colours.categories(samples, colour) == projection_colours.shallower_label(colour)).sum())
    if colour.startswith("level") and shallow:
        text += f", of which {shallow:,} have no {colour.replace('level', 'level-')} super-class (grey)"
    if highlight:
        text += f"; {int(projection_colours.under_node(samples, highlight).sum()):,} under {highlight} highlighted"
    vectors = len(chosen) - len(samples)
    if not vectors:
        return f"{text}; this head has no class vectors to overlay."
    if vectors <= charts.VECTORS_MAX:
        return f"{text}; diamonds are the class vectors, scaled to the embeddings' radius."
    return (f"{text}; of the {vectors:,} class vectors only those under the highlighted node are drawn (diamonds, "
            "scaled to the embeddings' radius): choose a super-class under 'Highlight' to see them.")


def _neighbours(run: RunResult, highlighted: str | None, paths: dict[str, int]) -> None:
    st.subheader("Nearest class vectors")
    vectors = loading.node_vectors(run)
    if not vectors.size:
        st.info(f"Head '{run.head}' has no class vectors: there are no nearest classes to list.")
        return
    node = paths[highlighted] if highlighted else pick_node("Nearest to", paths, key="embeddings_neighbours_of")
    path = highlighted or st.session_state["embeddings_neighbours_of"]
    table = nearest_nodes(run.hierarchy, vectors, node, k=NEIGHBOURS)
    st.caption(f"The {len(table)} nodes whose vectors point closest to {markdown(path)}'s (cosine similarity); "
               "tree distance is the number of edges between the two nodes."
               + (" Choose 'Highlight (none)' to pick another node." if highlighted else ""))
    st.dataframe(table.drop(columns="node"), hide_index=True,
                 column_config={"cosine": st.column_config.NumberColumn(format="%.3f"),
                                "angle": st.column_config.NumberColumn("angle (°)", format="%.1f")})


render(context())
