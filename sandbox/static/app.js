// The sandbox page: acting user, channels, messages, threads, Home tab, modals, notices.
// Long-polls /ui/state and re-renders; every action goes through the same JSON API as tests.
"use strict";

(() => {
  const { el } = Mrkdwn;
  const $ = (id) => document.getElementById(id);
  const PERMALINK = /^\/archives\/([A-Z0-9]+)\/p(\d{10})(\d{1,8})$/;
  const state = {
    users: {}, groups: {}, channels: {}, app: null,
    user: null, channel: null, thread: null, home: false,
    version: -1, data: null, generation: 0, modalKey: "", poll: null, linked: null,
  };

  async function api(path, body, signal) {
    const options = body === undefined ? { signal } : {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    };
    const response = await fetch(path, options);
    const payload = await response.json();
    if (!response.ok) throw new Error(payload.error || `HTTP ${response.status}`);
    return payload;
  }

  function ctx(onAction) {
    const tz = state.users[state.user] ? state.users[state.user].tz : undefined;
    return { users: state.users, groups: state.groups, channels: state.channels, onAction, tz,
      inputs: new Map(), errors: {}, input: null };
  }

  function localNotice(text) {
    const item = el("div", "notice local", text);
    $("notices").append(item);
    setTimeout(() => item.remove(), 6000);
  }

  // -- navigation ----------------------------------------------------------

  function readHash() {
    const params = new URLSearchParams(location.hash.slice(1));
    state.user = params.get("user") || state.user || Object.keys(state.users)
      .find((id) => !state.users[id].is_bot);
    state.channel = params.get("channel");
    state.thread = params.get("thread");
    state.home = params.get("home") === "1";
    // A permalink (/archives/<channel>/p<ts digits>) opens its channel at its message.
    const link = PERMALINK.exec(location.pathname);
    if (link && !state.channel && !state.home) {
      state.channel = link[1];
      state.linked = `${link[2]}.${link[3]}`;
    }
  }

  // A link button's url, opened as Slack does: a permalink of this workspace in the page,
  // as the same person; any other web address in a new tab.
  function follow(url) {
    let link;
    try { link = new URL(url); } catch { return; }  // Slack takes absolute addresses only
    const permalink = link.origin === location.origin && PERMALINK.exec(link.pathname);
    if (permalink) {
      state.linked = `${permalink[2]}.${permalink[3]}`;
      if (state.channel === permalink[1] && !state.home) showLinked();
      else go({ channel: permalink[1], thread: null, home: false });
    } else if (link.protocol === "http:" || link.protocol === "https:") {
      window.open(link.href, "_blank", "noopener");
    }
  }

  // Bring the permalinked message into view once it is on the page, and mark it.
  function showLinked() {
    if (!state.linked) return;
    const message = document.querySelector(`#messages article.message[data-ts="${state.linked}"]`);
    if (!message) return;
    message.classList.add("linked");
    message.scrollIntoView({ block: "center" });
    state.linked = null;
  }

  function go(changes) {
    const next = { user: state.user, channel: state.channel, thread: state.thread,
      home: state.home, ...changes };
    if (next.user !== state.user && !("channel" in changes)) {
      next.channel = null;  // another user may not see this channel
      next.thread = null;
    }
    const params = new URLSearchParams();
    params.set("user", next.user);
    if (next.channel) params.set("channel", next.channel);
    if (next.thread) params.set("thread", next.thread);
    if (next.home) params.set("home", "1");
    location.hash = params.toString();
  }

  // Someone opening the Home tab is one app_home_opened, as in Slack: arriving there, or
  // switching "Acting as" while there, so the app publishes that person's Home afresh.
  function openHome() {
    api("/ui/home", { user: state.user }).catch((error) => localNotice(error.message));
  }

  window.addEventListener("hashchange", () => {
    const before = { user: state.user, home: state.home };
    readHash();
    restart();
    if (state.home && (!before.home || before.user !== state.user)) openHome();
  });

  // -- polling -------------------------------------------------------------

  // One long poll at a time: a restart aborts the one under way, so switching views never
  // leaves polls waiting out their timeout (Chromium allows six connections per host).
  async function loop(generation, signal) {
    while (generation === state.generation) {
      const query = new URLSearchParams({ user: state.user, since: String(state.version) });
      if (state.channel && !state.home) query.set("channel", state.channel);
      if (state.thread && !state.home) query.set("thread", state.thread);
      try {
        const data = await api("/ui/state?" + query, undefined, signal);
        if (generation !== state.generation) return;
        reconnected();
        state.data = data;
        state.version = data.version;
        render();
      } catch (error) {
        if (generation !== state.generation) return;
        reconnecting();
        state.version = -1;  // a restarted server counts afresh: ask for everything
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
  }

  function restart() {
    state.generation += 1;
    state.version = -1;
    if (state.poll) state.poll.abort();
    state.poll = new AbortController();
    loop(state.generation, state.poll.signal);
  }

  // While the sandbox is away (a restarted demo), one banner says so; it goes on success.
  function reconnecting() {
    if ($("reconnecting")) return;
    const banner = el("div", "notice local", "The workspace is not answering; reconnecting…");
    banner.id = "reconnecting";
    $("notices").append(banner);
  }

  function reconnected() {
    const banner = $("reconnecting");
    if (banner) banner.remove();
  }

  // -- rendering -----------------------------------------------------------

  function formatTime(ts) {
    const tz = state.users[state.user] ? state.users[state.user].tz : undefined;
    const date = new Date(parseFloat(ts) * 1000);
    return new Intl.DateTimeFormat([], { hour: "2-digit", minute: "2-digit", timeZone: tz })
      .format(date);
  }

  function message(m, { inThread }) {
    const node = el("article", "message" + (m.is_ephemeral ? " ephemeral" : ""));
    node.dataset.ts = m.ts;
    const meta = el("div", "meta");
    const author = state.users[m.user];
    meta.append(el("b", "", author ? author.real_name || author.name : m.user || "app"));
    if (m.bot_id) meta.append(el("span", "badge", "APP"));
    meta.append(el("time", "muted", formatTime(m.ts)));
    if (m.edited) meta.append(el("span", "muted", "(edited)"));
    if (m.is_ephemeral) meta.append(el("span", "muted only-you", "Only visible to you"));
    node.append(meta);
    const onAction = (block, element, value, button) =>
      click(element, { channel: state.channel, message_ts: m.ts, action_id: element.action_id,
        block_id: block.block_id, value, ticked: Blocks.ticked(node) }, button);
    node.append(Blocks.render(m.blocks, ctx(onAction), m.text));
    if (!inThread && !m.is_ephemeral) {
      const replies = el("button", "replies link", m.reply_count
        ? `${m.reply_count} ${m.reply_count === 1 ? "reply" : "replies"}` : "Reply in thread");
      replies.type = "button";
      replies.addEventListener("click", () => go({ thread: m.ts }));
      node.append(replies);
    }
    return node;
  }

  async function click(element, target, button) {
    if (element.confirm && !(await Views.confirm($("confirm-layer"), element.confirm, ctx()))) return;
    if (element.type === "button" && element.url) follow(element.url);
    if (button) button.disabled = true;
    try {
      await api("/ui/click", { user: state.user, ...target });
    } catch (error) {
      localNotice(error.message);
    } finally {
      if (button) button.disabled = false;
    }
  }

  /** A channel as the sidebar and its title show it: a DM by the app, a group DM by its people. */
  function channelLabel(channel) {
    if (channel.is_im) return `${state.app.name} (messages)`;
    if (channel.is_mpim) return channel.title;
    return "# " + channel.name;
  }

  function renderSidebar(data) {
    const list = $("channel-list");
    const apps = $("app-list");
    const groups = $("dm-list");
    list.replaceChildren();
    apps.replaceChildren();
    groups.replaceChildren();
    for (const channel of data.channels) {
      state.channels[channel.id] = channel;
      const item = el("li");
      const link = el("a", "", channelLabel(channel));
      link.href = "#";
      link.dataset.channel = channel.id;
      if (channel.id === state.channel && !state.home) link.classList.add("active");
      link.addEventListener("click", (e) => {
        e.preventDefault();
        go({ channel: channel.id, thread: null, home: false });
      });
      item.append(link);
      (channel.is_im ? apps : channel.is_mpim ? groups : list).append(item);
    }
    const home = el("li");
    const link = el("a", state.home ? "active" : "", `${state.app.name} (Home)`);
    link.href = "#";
    link.id = "open-home";
    link.addEventListener("click", (e) => {
      e.preventDefault();
      if (state.home) openHome();  // already there: the hash does not change
      else go({ home: true, thread: null });
    });
    home.append(link);
    apps.prepend(home);
  }

  function renderNotices(data) {
    const box = $("notices");
    box.querySelectorAll(".notice:not(.local)").forEach((n) => n.remove());
    for (const notice of data.notices) {
      const item = el("div", "notice", notice.text);
      item.dataset.noticeId = notice.id;
      const dismiss = el("button", "link", "×");
      dismiss.type = "button";
      dismiss.setAttribute("aria-label", "Dismiss");
      dismiss.addEventListener("click", () =>
        api("/ui/notices/dismiss", { user: state.user, notice_id: notice.id }).catch(() => {}));
      item.append(dismiss);
      box.append(item);
    }
  }

  function renderMain(data) {
    const messages = $("messages");
    const home = $("home");
    messages.hidden = state.home;
    home.hidden = !state.home;
    $("composer").hidden = state.home;
    if (state.home) {
      $("channel-title").textContent = `${state.app.name} · Home`;
      home.replaceChildren();
      if (!data.home) { home.append(el("p", "muted", "The app has not published a Home tab.")); return; }
      const onAction = (block, element, value, button) => click(element,
        { view_id: data.home.id, action_id: element.action_id, block_id: block.block_id, value }, button);
      home.append(Blocks.render(data.home.blocks, ctx(onAction), ""));
      return;
    }
    const channel = data.channel;
    $("channel-title").textContent = channel
      ? channelLabel(channel) : "Pick a channel";
    const atBottom = messages.scrollHeight - messages.scrollTop - messages.clientHeight < 40;
    messages.replaceChildren();
    const all = [...(data.messages || []),
      ...(data.ephemerals || []).filter((e) => !e.thread_ts)];
    all.sort((a, b) => parseFloat(a.ts) - parseFloat(b.ts));
    for (const m of all) messages.append(message(m, { inThread: false }));
    if (atBottom) messages.scrollTop = messages.scrollHeight;
  }

  function renderThread(data) {
    const pane = $("thread");
    pane.hidden = !data.thread || state.home;
    if (pane.hidden) return;
    const list = $("thread-messages");
    list.replaceChildren();
    const replies = [...data.thread,
      ...(data.ephemerals || []).filter((e) => e.thread_ts === state.thread)];
    replies.sort((a, b) => parseFloat(a.ts) - parseFloat(b.ts));
    for (const m of replies) list.append(message(m, { inThread: true }));
  }

  function renderModal(data) {
    const layer = $("modal-layer");
    const top = data.modals[data.modals.length - 1];
    const key = top ? `${top.id}:${top.hash}` : "";
    if (key === state.modalKey) {  // same view: keep what the user is typing
      if (top) Views.showErrors(layer, top.errors || {});
      return;
    }
    state.modalKey = key;
    layer.replaceChildren();
    layer.hidden = !top;
    if (!top) return;
    const onAction = (block, element, value, button) => click(element,
      { view_id: top.id, action_id: element.action_id, block_id: block.block_id, value }, button);
    layer.append(Views.modal(top, ctx(onAction), {
      onSubmit: async (view, values, button) => {
        button.disabled = true;
        try {
          await api("/ui/views/submit", { user: state.user, view_id: view.id, values });
        } catch (error) { localNotice(error.message); } finally { button.disabled = false; }
      },
      onClose: (view) => api("/ui/views/close", { user: state.user, view_id: view.id })
        .catch((error) => localNotice(error.message)),
    }));
  }

  function render() {
    const data = state.data;
    if (!state.channel && !state.home && data.channels.length) {
      go({ channel: data.channels[0].id });
      return;
    }
    const user = state.users[state.user];
    $("acting-as").value = state.user;
    $("acting-tz").textContent = user ? `${user.tz_label} (${user.tz})` : "";
    renderSidebar(data);
    renderNotices(data);
    renderMain(data);
    showLinked();
    renderThread(data);
    renderModal(data);
  }

  // -- composers -----------------------------------------------------------

  async function send(text, threadTs) {
    const trimmed = text.trim();
    if (!trimmed || !state.channel) return;
    if (trimmed.startsWith("/") && !threadTs) {
      const [command, ...rest] = trimmed.split(/\s+/);
      await api("/ui/command", { user: state.user, channel: state.channel, command,
        text: trimmed.slice(command.length).trim() });
      return rest;
    }
    await api("/ui/message", { user: state.user, channel: state.channel, text: trimmed,
      thread_ts: threadTs || null });
  }

  function composer(formId, inputId, threadOf) {
    $(formId).addEventListener("submit", async (e) => {
      e.preventDefault();
      const input = $(inputId);
      const text = input.value;
      input.value = "";
      try { await send(text, threadOf()); } catch (error) { localNotice(error.message); }
    });
  }

  async function start() {
    const workspace = await api("/ui/workspace");
    state.app = workspace.app;
    $("team-name").textContent = workspace.team.name;
    for (const user of workspace.users) state.users[user.id] = user;
    for (const group of workspace.groups) state.groups[group.id] = group;
    const picker = $("acting-as");
    for (const user of workspace.users.filter((u) => !u.is_bot)) {
      const option = el("option", "", `${user.real_name} (@${user.name})`);
      option.value = user.id;
      picker.append(option);
    }
    picker.addEventListener("change", () => go({ user: picker.value }));
    $("thread-close").addEventListener("click", () => go({ thread: null }));
    composer("composer", "composer-input", () => null);
    composer("thread-composer", "thread-input", () => state.thread);
    readHash();
    restart();
    if (state.home) openHome();
  }

  start();
})();
