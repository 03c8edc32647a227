// rtgauge dashboard: the little script its pages load from /static/dashboard.js (never from
// elsewhere). The pages work without it; with it, a table sorts by the column whose header
// (class "sortable") is clicked, empty filter fields stay out of the address, and the runs
// picked for a comparison are remembered across pages (this tab's sessionStorage) and sent
// together.
(function () {
  'use strict';
  var KEY = 'rtgauge.picked';

  // --- Sorting ---------------------------------------------------------------------------
  function key(cell) {
    if (!cell) return null;
    var v = cell.getAttribute('data-v');
    if (v !== null && v !== '' && !isNaN(Number(v))) return Number(v);
    var t = cell.textContent.trim();
    return t === '' || t === '-' ? null : t.toLowerCase();
  }
  function compare(a, b) {
    if (typeof a === 'number' && typeof b === 'number') return a - b;
    return String(a).localeCompare(String(b), undefined, { numeric: true });
  }
  function sortBy(th) {
    var table = th.closest('table');
    var body = table && table.tBodies[0];
    if (!body) return;
    var col = Array.prototype.indexOf.call(th.parentNode.children, th);
    var up = th.getAttribute('aria-sort') !== 'ascending';
    table.querySelectorAll('th[aria-sort]').forEach(function (h) { h.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', up ? 'ascending' : 'descending');
    var rows = Array.prototype.slice.call(body.rows).map(function (r, i) {
      return { row: r, k: key(r.cells[col]), i: i };
    });
    rows.sort(function (x, y) {
      // Empty cells last either way; equal keys keep their order.
      if (x.k === null || y.k === null) return (x.k === null) - (y.k === null) || x.i - y.i;
      var c = compare(x.k, y.k);
      return (up ? c : -c) || x.i - y.i;
    });
    rows.forEach(function (r) { body.appendChild(r.row); });
  }
  document.querySelectorAll('th.sortable').forEach(function (th) {
    th.tabIndex = 0;
    th.title = 'sort by ' + th.textContent.trim();
    th.addEventListener('click', function () { sortBy(th); });
    th.addEventListener('keydown', function (e) {
      if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); sortBy(th); }
    });
  });

  // --- Filters: empty fields are not sent (`?kernel=6.12`, not `?board=&kernel=6.12&…`) ----
  document.querySelectorAll('form.filter').forEach(function (f) {
    f.addEventListener('submit', function () {
      f.querySelectorAll('input').forEach(function (i) { if (i.value.trim() === '') i.disabled = true; });
    });
  });

  // --- Runs picked for a comparison, across pages ------------------------------------------
  function load() {
    try { return JSON.parse(sessionStorage.getItem(KEY) || '[]').filter(function (v) { return /^\d+$/.test(v); }); }
    catch (e) { return []; }
  }
  function save(ids) {
    try { sessionStorage.setItem(KEY, JSON.stringify(ids)); } catch (e) { /* storage refused: this page only */ }
  }
  var picked = load();
  var boxes = document.querySelectorAll('form.compare input[type=checkbox][name=runs]');
  function show() {
    document.querySelectorAll('form.compare .picked').forEach(function (s) {
      var n = picked.length;
      s.textContent = n === 0 ? 'pick 2 to 8 runs with the boxes'
        : 'picked: run ' + picked.join(', run ') + (n < 2 ? ' (pick one more)' : n > 8 ? ' (8 at most)' : '');
    });
    document.querySelectorAll('form.compare button[type=submit]').forEach(function (b) {
      b.disabled = picked.length < 2 || picked.length > 8;
    });
    document.querySelectorAll('form.compare .unpick').forEach(function (b) { b.hidden = picked.length === 0; });
  }
  boxes.forEach(function (b) {
    b.checked = picked.indexOf(b.value) >= 0;
    b.addEventListener('change', function () {
      picked = picked.filter(function (v) { return v !== b.value; });
      if (b.checked) picked.push(b.value);
      save(picked);
      show();
    });
  });
  document.querySelectorAll('form.compare').forEach(function (f) {
    f.addEventListener('submit', function (e) {
      e.preventDefault();
      // One address for the runs picked here and on other pages: /compare?runs=A,B,C.
      window.location.href = f.getAttribute('action') + '?runs=' + picked.map(encodeURIComponent).join(',');
    });
    f.querySelectorAll('.unpick').forEach(function (b) {
      b.addEventListener('click', function () {
        picked = [];
        save(picked);
        boxes.forEach(function (x) { x.checked = false; });
        show();
      });
    });
  });
  show();
})();
