"""What the HTML report tests check in the page, as a reader would see it
(run by tests/chromium.py): every folded part opened (the explorer draws
the charts of each section opened), then every problem as a string:

- text that overlaps other text, or is cut by its box or the window, and a
  page wider than the window;
- a chart or timeline without time labels;
- a time label that does not read its instant on the clock its heading
  names (the incident's line, the timeline's caption, the explorer's
  clock): each label carries its instant (``data-t`` on SVG and
  timeline labels, ``data-ticks`` on an explorer chart);
- an incident chart whose line covers less than half of its width;
- a finding folded at small widths that takes more than one line."""
from __future__ import annotations

LAYOUT_CHECK = r"""
(async () => {
  document.querySelectorAll('details').forEach(d => d.open = true);
  // the explorer draws a section when it opens (its toggle event comes after this task)
  await new Promise(r => setTimeout(r, 50));
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const vw = document.documentElement.clientWidth, problems = [];
  if (document.documentElement.scrollWidth > vw + 1)
    problems.push(`page wider than the window: ${document.documentElement.scrollWidth} > ${vw}`);
  const boxes = [];
  const clipping = el => {
    const out = [];
    for (let a = el; a && a !== document.body; a = a.parentElement) {
      const s = getComputedStyle(a);
      if (s.overflowX !== 'visible' || s.overflowY !== 'visible') out.push(a);
    }
    return out;
  };
  const inside = (r, c) => r.left >= c.left - 1 && r.right <= c.right + 1 && r.top >= c.top - 1 && r.bottom <= c.bottom + 1;
  const name = n => (n.textContent || '').trim().slice(0, 40);
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (!n.textContent.trim() || n.parentElement.closest('svg, style, title, script')) continue;
    const range = document.createRange(); range.selectNodeContents(n);
    // a line shortened on purpose (text-overflow: ellipsis, its whole text a tap away) is the part shown
    // (code inside such a line is shortened with it)
    let cut = n.parentElement;
    while (cut && cut !== document.body && getComputedStyle(cut).textOverflow !== 'ellipsis' && getComputedStyle(cut).display === 'inline') cut = cut.parentElement;
    const shortened = cut && getComputedStyle(cut).textOverflow === 'ellipsis' ? cut.getBoundingClientRect() : null;
    for (let r of range.getClientRects()) {
      if (shortened) r = new DOMRect(r.left, r.top, Math.max(0, Math.min(r.right, shortened.right) - r.left), r.height);
      if (r.width < 1 || r.height < 1) continue;
      boxes.push({r, id: n, text: name(n), clip: shortened ? null : n.parentElement});
    }
  }
  document.querySelectorAll('svg text').forEach(t => {
    const r = t.getBoundingClientRect();
    if (r.width >= 1 && r.height >= 1) boxes.push({r, id: t, text: name(t), clip: t.closest('svg'), svg: true});
  });
  for (const b of boxes) {
    if (b.r.left < -1 || b.r.right > vw + 1) { problems.push(`cut at the window's edge: "${b.text}"`); continue; }
    const clips = b.svg ? [b.clip] : b.clip ? clipping(b.clip) : [];
    for (const c of clips) if (!inside(b.r, c.getBoundingClientRect())) { problems.push(`cut by its box: "${b.text}"`); break; }
  }
  // overlaps: boxes bucketed on a 100 px grid, each pair compared once
  const grid = new Map();
  boxes.forEach((b, i) => {
    for (let gx = Math.floor(b.r.left / 100); gx <= Math.floor(b.r.right / 100); gx++)
      for (let gy = Math.floor((b.r.top + scrollY) / 100); gy <= Math.floor((b.r.bottom + scrollY) / 100); gy++) {
        const k = gx + ',' + gy; if (!grid.has(k)) grid.set(k, []); grid.get(k).push(i);
      }
  });
  const seen = new Set();
  for (const ids of grid.values()) for (let x = 0; x < ids.length; x++) for (let y = x + 1; y < ids.length; y++) {
    const a = boxes[ids[x]], b = boxes[ids[y]];
    if (a.id === b.id) continue;
    const w = Math.min(a.r.right, b.r.right) - Math.max(a.r.left, b.r.left);
    const h = Math.min(a.r.bottom, b.r.bottom) - Math.max(a.r.top, b.r.top);
    if (w > 1 && h > 1) {
      const key = ids[x] + '-' + ids[y];
      if (!seen.has(key)) { seen.add(key); problems.push(`"${a.text}" overlaps "${b.text}"`); }
    }
  }
  // time labels: every chart says its times, every timeline its axis
  const time = /^(\d\d:\d\d(:\d\d)?|\d\d-\d\d|\d{4}-\d\d-\d\d)$/;
  const title = svg => (svg.querySelector('title') || {}).textContent;
  document.querySelectorAll('svg.chart').forEach((svg, i) => {
    const labels = [...svg.querySelectorAll('text')].filter(t => time.test(t.textContent.trim()));
    if (labels.length < 2) problems.push(`chart ${i} (${title(svg)}) has ${labels.length} time label(s)`);
  });
  document.querySelectorAll('.tl').forEach((tl, i) => {
    const shown = [...tl.querySelectorAll('.tick')].filter(t => t.getClientRects().length && time.test(t.textContent.trim()));
    if (shown.length < 2) problems.push(`timeline ${i} shows ${shown.length} time label(s)`);
  });
  // findings folded to one line each where they are folded (small widths)
  document.querySelectorAll('details.frow > summary').forEach((sm, i) => {
    const style = getComputedStyle(sm.querySelector('.ftitle'));
    const r = sm.getBoundingClientRect(), line = parseFloat(style.lineHeight) || 1.5 * parseFloat(style.fontSize);
    if (r.height > 0 && line > 0 && r.height > 2 * line)
      problems.push(`finding line ${i} takes ${Math.round(r.height / line)} lines: "${name(sm.querySelector('.ftitle'))}"`);
  });
  // every label on its heading's clock: the offset the heading states
  const offsetOf = text => {
    const m = /UTC([+-])(\d\d):(\d\d)/.exec(text || '');
    if (m) return (m[1] === '-' ? -1 : 1) * (3600 * +m[2] + 60 * +m[3]);
    if (/\bUTC\b|wall clock|as recorded/.test(text || '')) return 0;
    return null;
  };
  const two = n => String(n).padStart(2, '0');
  const reads = (t, off, label) => {
    const d = new Date((t + off) * 1000);
    const day = `${d.getUTCFullYear()}-${two(d.getUTCMonth() + 1)}-${two(d.getUTCDate())}`;
    const hms = `${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}`;
    return label === hms || label === hms.slice(0, 5) || label === day || label === day.slice(5);
  };
  const clocked = (what, heading, labels) => {
    const off = offsetOf(heading);
    if (off === null) { problems.push(`${what}: its heading names no clock ("${(heading || '').slice(0, 60)}")`); return; }
    if (labels.length < 2) problems.push(`${what} has ${labels.length} time label(s) with its instant`);
    for (const [t, label] of labels)
      if (!reads(t, off, label)) {
        const d = new Date((t + off) * 1000).toISOString().slice(0, 19).replace('T', ' ');
        problems.push(`${what}: label ${label} is not its instant on its heading's clock (${d})`);
        break;
      }
  };
  document.querySelectorAll('section.incident svg.chart').forEach((svg, i) => {
    const heading = svg.closest('section.incident').querySelector('.meta').textContent;
    clocked(`incident chart ${i} (${title(svg)})`, heading,
            [...svg.querySelectorAll('text.xt[data-t]')].map(e => [+e.dataset.t, e.textContent.trim()]));
    // the line spans at least half of the plot
    const plot = svg.querySelector('rect.plot').getBBox();
    const lines = [...svg.querySelectorAll('.data')].map(e => e.getBBox());
    const left = Math.min(...lines.map(b => b.x)), right = Math.max(...lines.map(b => b.x + b.width));
    const share = lines.length ? (right - left) / plot.width : 0;
    if (share < 0.5) problems.push(`incident chart ${i} (${title(svg)}) draws its data over ${Math.round(share * 100)} % of its width`);
  });
  document.querySelectorAll('.tl').forEach((tl, i) => {
    const story = tl.closest('section.incident');
    clocked(`timeline ${i}`, story ? story.querySelector('.meta').textContent : tl.querySelector('.tl-caption').textContent,
            [...tl.querySelectorAll('.tick[data-t]')].map(e => [+e.dataset.t, e.textContent.trim()]));
  });
  const explorer = document.querySelector('#metrics + p .clock');
  document.querySelectorAll('.ex-chart .uplot').forEach((u, i) => {
    clocked(`explorer chart ${i} (${u.parentElement.querySelector('figcaption').textContent})`, explorer && explorer.textContent,
            JSON.parse(u.dataset.ticks || '[]'));
  });
  return {problems: problems.slice(0, 50), count: problems.length, texts: boxes.length,
          charts: document.querySelectorAll('svg.chart').length, timelines: document.querySelectorAll('.tl').length,
          explorer: document.querySelectorAll('.ex-chart .uplot').length};
})()
"""
