// Slack mrkdwn rendered as DOM nodes. Text only ever reaches the page through
// textContent / createTextNode, so nothing in a message can become HTML.
"use strict";

const Mrkdwn = (() => {
  const EMOJI = {
    white_check_mark: "✅", heavy_check_mark: "✔️", x: "❌", no_entry: "⛔",
    warning: "⚠️", hourglass: "⌛", hourglass_flowing_sand: "⏳", lock: "🔒",
    eyes: "👀", clock3: "🕒", robot_face: "🤖", wastebasket: "🗑️", memo: "📝",
    email: "📧", rotating_light: "🚨", large_green_circle: "🟢", red_circle: "🔴",
    pencil2: "✏️", speech_balloon: "💬", heavy_multiplication_x: "✖️",
    arrow_up: "⬆️", ballot_box_with_check: "☑️", leftwards_arrow_with_hook: "↩️",
    lock_with_ink_pen: "🔏", unlock: "🔓",
  };
  const SAFE_URL = /^(https?:|mailto:)/i;
  // Slack's three escapes; &amp; last so "&amp;lt;" stays the text "&lt;".
  const decode = (s) => s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
  const emoji = (s) => s.replace(/:([a-z0-9_+-]+):/g, (m, name) => EMOJI[name] || m);

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // `<!date^SECONDS^TEMPLATE|fallback>` in the reader's own time zone, as Slack shows it.
  function date(target, fallback, tz) {
    const [, seconds, template] = target.split("^");
    const when = new Date(Number(seconds) * 1000);
    if (!template || Number.isNaN(when.getTime())) return fallback || target;
    const format = (options) => new Intl.DateTimeFormat("en-US", { timeZone: tz, ...options })
      .format(when);
    const tokens = {
      date_num: () => format({ year: "numeric", month: "2-digit", day: "2-digit" }),
      date: () => format({ year: "numeric", month: "long", day: "numeric" }),
      date_short: () => format({ year: "numeric", month: "short", day: "numeric" }),
      date_long: () => format({ weekday: "long", year: "numeric", month: "long", day: "numeric" }),
      time: () => format({ hour: "numeric", minute: "2-digit" }),
      time_secs: () => format({ hour: "numeric", minute: "2-digit", second: "2-digit" }),
    };
    for (const kind of ["date", "date_short", "date_long"]) tokens[kind + "_pretty"] = tokens[kind];
    return template.replace(/\{(\w+)\}/g, (m, name) => (tokens[name] ? tokens[name]() : m));
  }

  // One `<...>` control sequence: mention, channel, broadcast, group, date or link.
  function control(body, ctx) {
    const bar = body.indexOf("|");
    const target = bar >= 0 ? body.slice(0, bar) : body;
    const label = bar >= 0 ? decode(body.slice(bar + 1)) : null;
    if (/^@[UW]/.test(target)) {
      const user = ctx.users[target.slice(1)];
      return el("span", "mention", "@" + (user ? user.name : label || target.slice(1)));
    }
    if (target.startsWith("#C") || target.startsWith("#D")) {
      const channel = ctx.channels && ctx.channels[target.slice(1)];
      return el("span", "mention", "#" + (channel ? channel.name : label || target.slice(1)));
    }
    if (/^!(channel|here|everyone)$/.test(target)) {
      return el("span", "mention broadcast", "@" + target.slice(1));
    }
    if (target.startsWith("!subteam^")) {
      const group = ctx.groups && ctx.groups[target.slice(9)];
      return el("span", "mention", group ? "@" + group.handle : label || "@group");
    }
    if (target.startsWith("!date^")) return document.createTextNode(date(target, label, ctx.tz));
    if (target.startsWith("!")) return document.createTextNode(label || target);
    const url = decode(target);
    if (!SAFE_URL.test(url)) return document.createTextNode(label || url);
    const link = el("a", "", label || url);
    link.href = url;
    link.target = "_blank";
    link.rel = "noopener noreferrer";
    return link;
  }

  const INLINE = new RegExp([
    "`([^`\\n]+)`",                                            // 1 code
    "<([^<>\\n]+)>",                                           // 2 control sequence
    "(?<![\\w*])\\*(\\S(?:[^*\\n]*?\\S)?)\\*(?![\\w*])",        // 3 bold
    "(?<![\\w_])_(\\S(?:[^_\\n]*?\\S)?)_(?![\\w_])",             // 4 italic
    "(?<![\\w~])~(\\S(?:[^~\\n]*?\\S)?)~(?![\\w~])",             // 5 strike
  ].join("|"), "g");

  function inline(text, ctx, into, depth) {
    let last = 0;
    for (const m of text.matchAll(INLINE)) {
      if (m.index > last) into.append(emoji(decode(text.slice(last, m.index))));
      if (m[1] !== undefined) into.append(el("code", "", decode(m[1])));
      else if (m[2] !== undefined) into.append(control(m[2], ctx));
      else {
        const tag = m[3] !== undefined ? "b" : m[4] !== undefined ? "i" : "s";
        const inner = m[3] ?? m[4] ?? m[5];
        const node = el(tag);
        if (depth < 3) inline(inner, ctx, node, depth + 1);
        else node.textContent = decode(inner);
        into.append(node);
      }
      last = m.index + m[0].length;
    }
    if (last < text.length) into.append(emoji(decode(text.slice(last))));
  }

  function lines(text, ctx, into) {
    const parts = text.split("\n");
    parts.forEach((line, i) => {
      if (line.startsWith(">")) {
        const quote = el("span", "quote");
        inline(line.slice(1).replace(/^ /, ""), ctx, quote, 0);
        into.append(quote);
      } else {
        inline(line, ctx, into, 0);
      }
      if (i < parts.length - 1) into.append(el("br"));
    });
  }

  // Render mrkdwn into a new <span>; ctx = {users, channels, groups} keyed by id.
  function render(text, ctx) {
    const out = el("span", "mrkdwn");
    const source = String(text ?? "");
    let last = 0;
    for (const m of source.matchAll(/```([\s\S]*?)```/g)) {
      if (m.index > last) lines(source.slice(last, m.index), ctx, out);
      out.append(el("pre", "", decode(m[1].replace(/^\n/, ""))));
      last = m.index + m[0].length;
    }
    if (last < source.length) lines(source.slice(last), ctx, out);
    return out;
  }

  return { render, decode, el, emoji };
})();
