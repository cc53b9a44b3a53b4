"""Embeddings page: the 2-D projections that ``hseval evaluate`` computed (PCA, t-SNE, UMAP),
coloured by class, by a super-class level or by correct/wrong, with the class vectors overlaid."""

from __future__ import annotations

import streamlit as st

from app import loading
from app.state import Context, context
from app.views.common import PLOT, needs_runs, pick, pick_run, shows_problems
from hseval import charts

COLOURS = {"label": "class", "correct": "correct / wrong"}


def render(ctx: Context) -> None:
    st.title("Embeddings")
    if not needs_runs(ctx):
        return
    top = st.columns(3)
    run = pick_run("Run", ctx.runs, key="embeddings_run", container=top[0])
    with shows_problems():
        points = loading.table(run, "projections.csv")
        if points.empty:
            reason = run.unavailable.get("projections")
            st.info(f"{run.name} has no projections: {reason}." if reason else
                    f"{run.name} has no projections: evaluate with 'hseval evaluate --projections pca,tsne'.")
            return
        methods = list(dict.fromkeys(points["method"].astype(str)))
        method = pick("Projection", methods, key="embeddings_method", container=top[1])
        levels = sorted(c for c in points.columns if c.startswith("level"))
        options = {**{c: f"super-class, {c.replace('level', 'level ')}" for c in levels}, **COLOURS}
        colour = top[2].selectbox("Colour by", list(options), format_func=options.get, key="embeddings_colour")
        vectors = st.toggle("Show class vectors", value=True, key="embeddings_vectors")
        chosen = points[points["method"].astype(str) == method]
        st.plotly_chart(charts.projection_scatter(chosen, color=colour, show_vectors=vectors,
                                                  title=f"{run.name}: {method} of the embeddings"),
                        key="embeddings_scatter", config=PLOT)
        samples = int((chosen["kind"] == "sample").sum())
        vectors_note = ("diamonds are the class vectors, scaled to the embeddings' radius" if samples < len(chosen)
                        else "this head has no class vectors to overlay")
        st.caption(f"{samples:,} samples (a stratified sample of the split); {vectors_note}.")


render(context())
