/**
 * Entry point: the ES module TensorBoard loads for the Profile tab.
 *
 * TensorBoard 2.21 shows a plugin whose frontend_metadata() has an es_module_path in an
 * iframe at `data/plugin_entry.html?name=profile`. That page is just
 *   <head><base href="plugin/profile/"></head>
 *   <body><script type="module">import("./index.js").then((m) => void m.render());</script>
 * so render() gets no arguments, finds an empty body, and must bring its own stylesheet.
 * The standalone page (index.html) links the stylesheet itself and loads this module with
 * `<script type="module" src="./index.js" data-tb-profile-standalone>`, which renders at once.
 */
import { render as renderPreact } from "preact";
import { App } from "./app";
import { createSelectionStore } from "./location";
import "./styles.css";

const ROOT_ID = "tb-profile-root";
const STYLESHEET = new URL("./index.css", import.meta.url).href;

function stylesheetLinked(): boolean {
  return Array.from(document.querySelectorAll<HTMLLinkElement>('link[rel="stylesheet"]')).some(
    (link) => link.href === STYLESHEET,
  );
}

/** Links index.css (beside index.js) once; calls `then` when it has loaded or failed. */
function linkStylesheet(then: () => void): void {
  if (stylesheetLinked()) {
    then();
    return;
  }
  const link = document.createElement("link");
  link.rel = "stylesheet";
  link.href = STYLESHEET;
  link.addEventListener("load", then, { once: true });
  link.addEventListener("error", then, { once: true });
  document.head.appendChild(link);
}

/** Mounts the Profile tab into `container`, or into a root element added to <body>. */
export function render(container?: Element): void {
  let root = container ?? document.getElementById(ROOT_ID);
  if (!root) {
    root = document.createElement("div");
    root.id = ROOT_ID;
    document.body.appendChild(root);
  }
  const target = root;
  document.documentElement.classList.add("tb-profile");
  linkStylesheet(() => renderPreact(<App store={createSelectionStore(window)} />, target));
}

if (document.querySelector("script[data-tb-profile-standalone]")) render();
