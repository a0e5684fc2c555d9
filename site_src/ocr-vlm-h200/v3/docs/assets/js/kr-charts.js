(function () {
"use strict";
const CHARTS = "div.kr-chart[data-spec-ref]";
/* Below this column width (px) a chart is re-laid out: its plot as wide as the column (less the
   axes), its legend under the plot, so its text keeps its size instead of being scaled down. */
const NARROW = 600;
const AXES = 90;

function fitted(spec, column) {
  if (!column || column >= NARROW) return spec;
  if (typeof spec.width === "number") spec.width = Math.max(160, Math.min(spec.width, column - AXES));
  const config = spec.config || {};
  spec.config = Object.assign({}, config, {legend: Object.assign({}, config.legend, {orient: "bottom", columns: 1})});
  return spec;
}

async function draw(div) {
  const holder = document.getElementById(div.dataset.specRef);
  if (!holder || div.dataset.krState) return;
  div.dataset.krState = "drawing";
  const fallback = Array.from(div.children);
  const target = document.createElement("div");
  div.append(target);
  try {
    const spec = fitted(JSON.parse(holder.textContent), div.clientWidth);
    await window.vegaEmbed(target, spec, {renderer: "svg", actions: false});
    fallback.forEach((node) => node.remove());
    div.dataset.krState = "drawn";
  } catch (error) {
    target.remove();
    div.dataset.krState = "failed";
    console.error("kr-charts: " + div.id + ": " + error);
  }
}

function drawAll() {
  document.querySelectorAll(CHARTS).forEach(draw);
}

if (window.document$ && typeof window.document$.subscribe === "function") {
  window.document$.subscribe(drawAll);
} else if (document.readyState === "loading") {
  document.addEventListener("DOMContentLoaded", drawAll);
} else {
  drawAll();
}
})();
