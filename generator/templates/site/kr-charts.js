(function () {
"use strict";
const CHARTS = "div.kr-chart[data-spec-ref]";

async function draw(div) {
  const holder = document.getElementById(div.dataset.specRef);
  if (!holder || div.dataset.krState) return;
  div.dataset.krState = "drawing";
  const fallback = Array.from(div.children);
  const target = document.createElement("div");
  div.append(target);
  try {
    await window.vegaEmbed(target, JSON.parse(holder.textContent), {renderer: "svg", actions: false});
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
