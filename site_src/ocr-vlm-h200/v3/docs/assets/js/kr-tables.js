// kernel-report: sortable and filterable tables, served by the site itself (no dependencies).
//
// Every Markdown table of a page (`article table:not([class])`) gets:
// - sorting: a click on a header cell (or Enter/Space on it) sorts the rows by that column,
//   again reverses. Right-aligned columns are numeric: a cell sorts by its `data-sort` value or
//   else the first number of its text ("1,234.5", "+3.2", "4.22–8.29" → 4.22); cells without a
//   number ("unknown") sort last either way. Other columns sort as text in the page's language.
// - filtering (tables of more than two columns and FILTER_MIN_ROWS rows): a search box above the table keeps
//   the rows whose text, or a kernel name's full name on hover, contains every typed word.
// A table wider than the page's column takes the table of contents' room, then scrolls inside its
// own box (see markWide).
// The words (box label, header hint) come from the page: `.kr-table-words` data attributes,
// rendered from the translation files.
(function () {
  "use strict";

  const TABLES = "article table:not([class])";
  const FILTER_MIN_ROWS = 15;
  const NUMBER = /[-+\u2212]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?|[-+\u2212]?\.\d+/;

  function words() {
    const holder = document.querySelector(".kr-table-words");
    return holder ? holder.dataset : {};
  }

  function numberOf(cell) {
    const text = cell.dataset.sort !== undefined ? cell.dataset.sort : cell.textContent;
    const match = NUMBER.exec(text);
    return match ? parseFloat(match[0].replace(/,/g, "").replace("\u2212", "-")) : NaN;
  }

  function isNumeric(th) {
    return (th.style.textAlign || th.getAttribute("align") || "") === "right";
  }

  function sortBy(table, column, numeric, descending) {
    const body = table.tBodies[0];
    const rows = Array.from(body.rows);
    const collator = new Intl.Collator(document.documentElement.lang || undefined, {numeric: true});
    const keyed = rows.map((row, index) => {
      const cell = row.cells[column];
      return {row, index, key: cell ? (numeric ? numberOf(cell) : cell.textContent.trim()) : ""};
    });
    const sign = descending ? -1 : 1;
    keyed.sort((a, b) => {
      if (numeric) {
        const aMissing = Number.isNaN(a.key), bMissing = Number.isNaN(b.key);
        if (aMissing || bMissing) return aMissing === bMissing ? a.index - b.index : (aMissing ? 1 : -1);
        return a.key === b.key ? a.index - b.index : sign * (a.key - b.key);
      }
      return sign * collator.compare(a.key, b.key) || a.index - b.index;
    });
    keyed.forEach((item) => body.append(item.row));
  }

  function makeSortable(table, hint) {
    const heads = Array.from(table.tHead.rows[0].cells);
    heads.forEach((th, column) => {
      const numeric = isNumeric(th);
      th.classList.add("kr-sortable");
      if (numeric) {
        th.classList.add("kr-num");
        Array.from(table.tBodies[0].rows).forEach((row) => row.cells[column] && row.cells[column].classList.add("kr-num"));
      }
      th.tabIndex = 0;
      if (hint) th.title = hint;
      th.setAttribute("aria-sort", "none");
      const sort = () => {
        // numbers: largest first on the first click; text: A to Z
        const descending = th.getAttribute("aria-sort") === "none"
          ? numeric : th.getAttribute("aria-sort") === "ascending";
        heads.forEach((other) => other.setAttribute("aria-sort", "none"));
        th.setAttribute("aria-sort", descending ? "descending" : "ascending");
        sortBy(table, column, numeric, descending);
      };
      th.addEventListener("click", sort);
      th.addEventListener("keydown", (event) => {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          sort();
        }
      });
    });
  }

  function rowText(row) {
    const hovers = Array.from(row.querySelectorAll("[title]"), (el) => el.getAttribute("title"));
    return (row.textContent + " " + hovers.join(" ")).toLowerCase();
  }

  function addFilter(table, label) {
    const rows = Array.from(table.tBodies[0].rows);
    const texts = rows.map(rowText);
    const box = document.createElement("input");
    box.type = "search";
    box.className = "kr-table-filter";
    if (label) {
      box.placeholder = label;
      box.setAttribute("aria-label", label);
    }
    box.addEventListener("input", () => {
      const wanted = box.value.toLowerCase().split(/\s+/).filter(Boolean);
      rows.forEach((row, i) => {
        row.hidden = !wanted.every((word) => texts[i].includes(word));
      });
    });
    const anchor = table.closest(".md-typeset__scrollwrap") || table;
    anchor.before(box);
  }

  // Wide screens lay tables out in the page, so their header sticks while the page scrolls; a
  // table still wider than the column scrolls inside its own box instead (class kr-wide).
  // A page with a table wider than its column first gives it the table of contents' room
  // (class kr-no-toc on the body hides the right sidebar), then measures again.
  function wideTables() {
    return Array.from(document.querySelectorAll(TABLES)).filter((table) => {
      const box = table.closest(".md-typeset__scrollwrap");
      return box && table.getBoundingClientRect().width > box.clientWidth + 1;
    });
  }

  function markWide() {
    document.querySelectorAll(".md-typeset__scrollwrap.kr-wide").forEach((box) => box.classList.remove("kr-wide"));
    document.body.classList.remove("kr-no-toc");
    if (!wideTables().length) return;
    document.body.classList.add("kr-no-toc");
    wideTables().forEach((table) => table.closest(".md-typeset__scrollwrap").classList.add("kr-wide"));
  }

  function setUp() {
    const text = words();
    document.querySelectorAll(TABLES).forEach((table) => {
      if (table.dataset.krTable || !table.tHead || !table.tBodies.length) return;
      table.dataset.krTable = "ready";
      const count = table.tBodies[0].rows.length;
      if (count > 1) makeSortable(table, text.sort);
      if (count > FILTER_MIN_ROWS && table.tHead.rows[0].cells.length > 2) addFilter(table, text.filter);
    });
    window.requestAnimationFrame(markWide);
  }

  window.addEventListener("resize", markWide);

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(setUp);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", setUp);
  } else {
    setUp();
  }
})();
