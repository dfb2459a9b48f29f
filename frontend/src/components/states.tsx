/** The main area's non-view states: loading, an error, no profiles yet, a short notice. */
import { Component, type ComponentChildren } from "preact";
import { routeUrl } from "../api";
import { useJson } from "../hooks";
import { CaptureButton } from "./capture_dialog";

export function Loading({ what }: { what: string }) {
  return (
    <div class="state loading" data-testid="loading" role="status" aria-live="polite">
      <span class="spinner" aria-hidden="true" />
      <span>Loading {what}…</span>
    </div>
  );
}

export function ErrorMessage({ title, message }: { title: string; message: string }) {
  return (
    <div class="state error" role="alert">
      <h2>{title}</h2>
      <p class="error-text" data-testid="error-message">
        {message}
      </p>
    </div>
  );
}

export function Notice({ testid, children }: { testid: string; children: ComponentChildren }) {
  return (
    <div class="state notice" data-testid={testid}>
      {children}
    </div>
  );
}

interface LinksLeftOut {
  readonly links_left_out: number;
  readonly message: string | null;
}

/** How many symbolic links the logdir walk left out, and how to allow them (the `links` route). */
function LinksNotice() {
  const links = useJson<LinksLeftOut>(routeUrl("links"));
  if (links.state !== "ok" || !links.data.message) return null;
  return (
    <p
      class="empty-links"
      role="note"
      data-testid="empty-links"
      data-links-left-out={String(links.data.links_left_out)}
    >
      {links.data.message}
    </p>
  );
}

export function EmptyState({ onCapture }: { readonly onCapture: () => void }) {
  return (
    <div class="state empty" data-testid="empty-state">
      <h2>No profiles found</h2>
      <LinksNotice />
      <p>
        The Profile tab reads profiles that TensorFlow or JAX wrote under TensorBoard's log
        directory, at
      </p>
      <pre class="path">{"<logdir>/[<run>/]plugins/profile/<session>/<host>.xplane.pb"}</pre>
      <p>To capture one:</p>
      <ul data-testid="empty-how-to">
        <li data-framework="keras">
          Keras: pass <code>tf.keras.callbacks.TensorBoard(log_dir=logdir, profile_batch=(10, 20))</code>{" "}
          to <code>model.fit</code>.
        </li>
        <li data-framework="tensorflow">
          Any TensorFlow code: wrap a few steps in{" "}
          <code>tf.profiler.experimental.start(logdir)</code> …{" "}
          <code>tf.profiler.experimental.stop()</code>.
        </li>
        <li data-framework="jax">
          JAX: wrap a few steps in <code>with jax.profiler.trace(logdir):</code> (or{" "}
          <code>jax.profiler.start_trace(logdir)</code> … <code>jax.profiler.stop_trace()</code>).
        </li>
        <li data-framework="server">
          A running program that started a profiler server, TensorFlow's{" "}
          <code>tf.profiler.experimental.server.start(9999)</code> or JAX's{" "}
          <code>jax.profiler.start_server(9999)</code>: use Capture profile with{" "}
          <code>localhost:9999</code>.
        </li>
      </ul>
      <CaptureButton onClick={onCapture} />
      <p class="hint">Profiles that appear later show up after a refresh.</p>
    </div>
  );
}

interface BoundaryState {
  readonly error: string | null;
}

/** Shows a view's rendering error as an error message instead of a blank page. */
export class ViewErrorBoundary extends Component<{ children: ComponentChildren }, BoundaryState> {
  override state: BoundaryState = { error: null };

  override componentDidCatch(error: unknown): void {
    this.setState({ error: error instanceof Error ? error.message : String(error) });
  }

  override render() {
    const { error } = this.state;
    if (error !== null) return <ErrorMessage title="This view failed to render" message={error} />;
    return this.props.children;
  }
}
