// Modals (with inputs, field errors, submit/close) and confirm dialogs.
"use strict";

const Views = (() => {
  const { el } = Mrkdwn;
  // Block Kit inputs the browser has a control for, by the <input> type that shows them.
  const TYPED_INPUTS = {
    number_input: "number", email_text_input: "email", url_text_input: "url",
    datepicker: "date", datetimepicker: "datetime-local",
  };

  // An input block; registers a getter in ctx.inputs so submit can collect the value.
  function input(block, ctx) {
    const element = block.element || {};
    const key = `${block.block_id}/${element.action_id}`;
    const wrapper = el("div", "bk-input");
    const id = "in-" + block.block_id;
    const label = el("label", "", block.label ? block.label.text : "");
    label.htmlFor = id;
    if (block.optional) label.append(el("span", "muted", " (optional)"));
    wrapper.append(label);
    let control;
    let read;
    if (element.type === "plain_text_input") {
      control = el(element.multiline ? "textarea" : "input");
      control.value = element.initial_value || "";
      if (element.placeholder) control.placeholder = element.placeholder.text;
      read = () => control.value;
    } else if (TYPED_INPUTS[element.type]) {
      control = el("input");
      control.type = TYPED_INPUTS[element.type];
      if (element.type === "number_input" && element.is_decimal_allowed) control.step = "any";
      if (element.type === "datetimepicker") {
        // Shown and read in UTC: "YYYY-MM-DDTHH:MM" <-> seconds since the epoch.
        const at = element.initial_date_time;
        control.value = at ? new Date(at * 1000).toISOString().slice(0, 16) : "";
        read = () => (control.value ? String(Date.parse(control.value + ":00Z") / 1000) : null);
      } else {
        control.value = element.initial_value || element.initial_date || "";
        read = () => control.value || null;
      }
    } else if (element.type === "static_select") {
      control = Blocks.select(block, element, ctx, null);
      read = () => control.value || null;
    } else if (element.type === "radio_buttons" || element.type === "checkboxes") {
      const kind = element.type === "radio_buttons" ? "radio" : "checkbox";
      control = Blocks.choices(element, ctx, kind, key);
      read = () => {
        const picked = [...control.querySelectorAll("input:checked")].map((b) => b.value);
        return kind === "radio" ? picked[0] || null : picked;
      };
    } else {
      control = el("span", "unsupported", `[${element.type}]`);
      read = () => null;
    }
    control.id = id;
    control.dataset.actionId = element.action_id || "";
    wrapper.append(control);
    if (block.hint) wrapper.append(el("div", "muted hint", block.hint.text));
    const error = ctx.errors[block.block_id];
    if (error) {
      wrapper.classList.add("has-error");
      wrapper.append(el("div", "field-error", error));
    }
    ctx.inputs.set(key, { block_id: block.block_id, action_id: element.action_id, read });
    return wrapper;
  }

  // Show new field errors without rebuilding the modal, so what the user typed stays.
  function showErrors(box, errors) {
    for (const wrapper of box.querySelectorAll(".bk-input")) {
      wrapper.querySelectorAll(".field-error").forEach((n) => n.remove());
      const error = errors[wrapper.dataset.blockId];
      wrapper.classList.toggle("has-error", Boolean(error));
      if (error) wrapper.append(el("div", "field-error", error));
    }
  }

  // Collect `{block_id: {action_id: value}}` from a rendered modal.
  function values(inputs) {
    const out = {};
    for (const { block_id, action_id, read } of inputs.values()) {
      out[block_id] = { [action_id]: read() };
    }
    return out;
  }

  function modal(view, ctx, { onSubmit, onClose }) {
    const inputs = new Map();
    const viewCtx = { ...ctx, inputs, errors: view.errors || {}, input: null };
    viewCtx.input = (block) => input(block, viewCtx);
    const box = el("div", "modal");
    box.setAttribute("role", "dialog");
    box.setAttribute("aria-modal", "true");
    box.dataset.viewId = view.id;
    box.dataset.callbackId = view.callback_id || "";
    const title = el("h2", "", view.title ? view.title.text : "");
    box.append(title);
    box.append(Blocks.render(view.blocks, viewCtx, ""));
    const footer = el("div", "modal-footer");
    const close = el("button", "bk-button", view.close ? view.close.text : "Cancel");
    close.type = "button";
    close.dataset.role = "close";
    close.addEventListener("click", () => onClose(view));
    footer.append(close);
    if (view.submit) {
      const submit = el("button", "bk-button primary", view.submit.text);
      submit.type = "button";
      submit.dataset.role = "submit";
      submit.addEventListener("click", () => onSubmit(view, values(inputs), submit));
      footer.append(submit);
    }
    box.append(footer);
    return box;
  }

  // Slack's confirm dialog; resolves true when confirmed.
  function confirm(layer, dialog, ctx) {
    return new Promise((resolve) => {
      layer.replaceChildren();
      const box = el("div", "modal confirm");
      box.setAttribute("role", "alertdialog");
      box.append(el("h2", "", dialog.title ? dialog.title.text : "Are you sure?"));
      box.append(Blocks.text(dialog.text, ctx));
      const footer = el("div", "modal-footer");
      const deny = el("button", "bk-button", dialog.deny ? dialog.deny.text : "Cancel");
      const ok = el("button", "bk-button " + (dialog.style === "danger" ? "danger" : "primary"),
        dialog.confirm ? dialog.confirm.text : "Yes");
      deny.type = ok.type = "button";
      deny.dataset.role = "deny";
      ok.dataset.role = "confirm";
      const done = (answer) => { layer.hidden = true; layer.replaceChildren(); resolve(answer); };
      deny.addEventListener("click", () => done(false));
      ok.addEventListener("click", () => done(true));
      footer.append(deny, ok);
      box.append(footer);
      layer.append(box);
      layer.hidden = false;
      ok.focus();
    });
  }

  return { modal, confirm, showErrors };
})();
