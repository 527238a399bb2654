// The keyboard shortcuts, listed once for the help dialog, the settings page and docs/web.md.
export const SHORTCUTS = [
  [["Enter"], "Send the message (in the message box) or answer a text question"],
  [["Shift", "Enter"], "New line in the message box"],
  [["/"], "Go to the message box"],
  [["Ctrl", "."], "Stop the running turn"],
  [["Alt", "↑"], "Previous session"],
  [["Alt", "↓"], "Next session"],
  [["Escape"], "Close a dialog or the menu (an open question stays in the conversation)"],
  [["?"], "Show these shortcuts"],
  [["Tab"], "Move through links, buttons and fields in reading order; in the empty message box, switch the session's agent (build, plan, …)"],
];
