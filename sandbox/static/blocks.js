// Block Kit rendered as DOM. ctx: {users, channels, groups, onAction(block, element, value),
// inputs (Map for modal inputs), errors ({block_id: text})}. DOM nodes and textContent only.
"use strict";

const Blocks = (() => {
  const { el, render: mrkdwn, emoji } = Mrkdwn;
  const SAFE_URL = /^https?:/i;

  function text(obj, ctx) {
    if (!obj) return el("span");
    if (obj.type === "mrkdwn") return mrkdwn(obj.text, ctx);
    return el("span", "plain", emoji(String(obj.text ?? "")));
  }

  function imageLink(url, alt) {
    const label = "🖼 " + (alt || "image");
    if (!SAFE_URL.test(String(url || ""))) return el("span", "image-link", label);
    const link = el("a", "image-link", label);
    link.href = url;
    link.target = "_blank";
    link.rel = "noopener noreferrer";
    return link;
  }

  function button(block, element, ctx) {
    const node = el("button", "bk-button");
    node.type = "button";
    node.append(text(element.text, ctx));
    if (element.style === "primary" || element.style === "danger") node.classList.add(element.style);
    node.dataset.actionId = element.action_id;
    node.dataset.blockId = block.block_id;
    if (element.url && SAFE_URL.test(element.url)) node.title = element.url;
    node.addEventListener("click", () => ctx.onAction(block, element, null, node));
    return node;
  }

  function options(element) {
    const all = [...(element.options || [])];
    for (const group of element.option_groups || []) all.push(...(group.options || []));
    return all;
  }

  function select(block, element, ctx, onChange) {
    const node = el("select", "bk-select");
    node.dataset.actionId = element.action_id;
    node.dataset.blockId = block.block_id;
    // An overflow menu is Slack's "⋯" button: it never holds a choice, so after a pick (or
    // a cancelled confirm) it shows "⋯" again and the same option can be picked once more.
    const menu = element.type === "overflow";
    if (menu) node.setAttribute("aria-label", "More actions");
    const label = menu ? "⋯" : element.placeholder ? element.placeholder.text : "Select…";
    const placeholder = el("option", "", label);
    placeholder.value = "";
    node.append(placeholder);
    for (const option of options(element)) {
      const item = el("option", "", emoji(option.text.text));
      item.value = option.value;
      node.append(item);
    }
    const initial = element.initial_option;
    if (initial) node.value = initial.value;
    if (onChange) {
      node.addEventListener("change", () => {
        const value = node.value;
        if (menu) node.value = "";
        if (value) onChange(value, node);
      });
    }
    return node;
  }

  // Checkboxes (or radio buttons), ticked as drawn; `name` groups their inputs.
  function choices(element, ctx, kind, name) {
    const node = el("div", "bk-choices");
    const initial = new Set([element.initial_option, ...(element.initial_options || [])]
      .filter(Boolean).map((o) => o.value));
    for (const option of options(element)) {
      const choice = el("label", "bk-choice");
      const box = el("input");
      box.type = kind;
      box.name = name;
      box.value = option.value;
      box.checked = initial.has(option.value);
      choice.append(box, " ", text(option.text, ctx));
      node.append(choice);
    }
    return node;
  }

  // A message's checkbox group: its ticks go with the message's next click (state.values).
  function ticks(block, element, ctx) {
    const node = choices(element, ctx, "checkbox", `${block.block_id} ${element.action_id}`);
    node.classList.add("bk-ticks");
    node.dataset.blockId = block.block_id;
    return node;
  }

  // An interactive element inside a message/home/modal (not an input block).
  function interactive(block, element, ctx) {
    switch (element.type) {
      case "button": return button(block, element, ctx);
      case "checkboxes": return ticks(block, element, ctx);
      case "static_select":
      case "overflow":
        return select(block, element, ctx, (value, node) => ctx.onAction(block, element, value, node));
      case "image": return imageLink(element.image_url, element.alt_text);
      default: return el("span", "unsupported", `[${element.type}]`);
    }
  }

  function richElements(elements, ctx, into) {
    for (const item of elements || []) {
      let node;
      if (item.type === "text") {
        node = el("span", "", item.text);
        const style = item.style || {};
        if (style.bold) node = wrap("b", node);
        if (style.italic) node = wrap("i", node);
        if (style.strike) node = wrap("s", node);
        if (style.code) node = wrap("code", node);
      } else if (item.type === "link") {
        node = SAFE_URL.test(item.url || "") ? el("a", "", item.text || item.url) : el("span", "", item.text || item.url || "");
        if (node.tagName === "A") { node.href = item.url; node.target = "_blank"; node.rel = "noopener noreferrer"; }
      } else if (item.type === "user") {
        const user = ctx.users[item.user_id];
        node = el("span", "mention", "@" + (user ? user.name : item.user_id));
      } else if (item.type === "channel") {
        node = el("span", "mention", "#" + item.channel_id);
      } else if (item.type === "emoji") {
        node = el("span", "", emoji(`:${item.name}:`));
      } else if (item.type === "broadcast") {
        node = el("span", "mention broadcast", "@" + item.range);
      } else {
        node = el("span", "unsupported", `[${item.type}]`);
      }
      into.append(node);
    }
  }

  function wrap(tag, child) {
    const node = el(tag);
    node.append(child);
    return node;
  }

  function richText(block, ctx) {
    const out = el("div", "bk-rich-text");
    for (const part of block.elements || []) {
      if (part.type === "rich_text_preformatted") {
        const pre = el("pre");
        richElements(part.elements, ctx, pre);
        out.append(pre);
      } else if (part.type === "rich_text_quote") {
        const quote = el("blockquote");
        richElements(part.elements, ctx, quote);
        out.append(quote);
      } else if (part.type === "rich_text_list") {
        const list = el(part.style === "ordered" ? "ol" : "ul");
        for (const section of part.elements || []) {
          const item = el("li");
          richElements(section.elements, ctx, item);
          list.append(item);
        }
        out.append(list);
      } else {
        const para = el("div");
        richElements(part.elements, ctx, para);
        out.append(para);
      }
    }
    return out;
  }

  function section(block, ctx) {
    const out = el("div", "bk-section");
    const body = el("div", "bk-section-body");
    if (block.text) body.append(text(block.text, ctx));
    if (block.fields && block.fields.length) {
      const fields = el("div", "bk-fields");
      for (const field of block.fields) fields.append(wrap("div", text(field, ctx)));
      body.append(fields);
    }
    out.append(body);
    if (block.accessory) {
      const accessory = el("div", "bk-accessory");
      accessory.append(interactive(block, block.accessory, ctx));
      out.append(accessory);
    }
    return out;
  }

  function block(b, ctx) {
    let node;
    switch (b.type) {
      case "header": node = el("h3", "bk-header", emoji(b.text ? b.text.text : "")); break;
      case "section": node = section(b, ctx); break;
      case "divider": node = el("hr", "bk-divider"); break;
      case "context":
        node = el("div", "bk-context");
        for (const item of b.elements || []) {
          node.append(item.type === "image" ? imageLink(item.image_url, item.alt_text) : text(item, ctx));
        }
        break;
      case "actions":
        node = el("div", "bk-actions");
        for (const element of b.elements || []) node.append(interactive(b, element, ctx));
        break;
      case "rich_text": node = richText(b, ctx); break;
      case "image":
        node = el("div", "bk-image");
        if (b.title) node.append(text(b.title, ctx), " ");
        node.append(imageLink(b.image_url, b.alt_text));
        break;
      case "input": node = ctx.input ? ctx.input(b) : el("div", "unsupported", "[input]"); break;
      default: node = el("div", "unsupported", `[unsupported block: ${b.type}]`);
    }
    node.dataset.blockId = b.block_id || "";
    return node;
  }

  // Render a list of blocks; falls back to the message's text when there are none.
  function render(blocks, ctx, fallbackText) {
    const out = el("div", "blocks");
    if (!blocks || !blocks.length) {
      out.append(mrkdwn(fallbackText || "", ctx));
      return out;
    }
    for (const b of blocks) out.append(block(b, ctx));
    return out;
  }

  // What each checkbox group inside `node` has ticked: {block_id: [option values]}.
  function ticked(node) {
    return Object.fromEntries([...node.querySelectorAll(".bk-ticks")].map((group) =>
      [group.dataset.blockId, [...group.querySelectorAll("input:checked")].map((b) => b.value)]));
  }

  return { render, text, select, options, choices, ticked };
})();
