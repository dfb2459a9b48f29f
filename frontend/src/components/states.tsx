/** The main area's non-view states: loading, an error, no profiles yet, a short notice. */
import { Component, type ComponentChildren } from "preact";
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

export function EmptyState({ onCapture }: { readonly onCapture: () => void }) {
  return (
    <div class="state empty" data-testid="empty-state">
      <h2>No profiles found</h2>
      <p>
        The Profile tab reads profiles that TensorFlow or JAX wrote under TensorBoard's log
        directory, at
      </p>
      <pre class="path">{"<logdir>/[<run>/]plugins/profile/<session>/<host>.xplane.pb"}</pre>
      <p>To capture one:</p>
      <ul>
        <li>
          Keras: pass <code>tf.keras.callbacks.TensorBoard(log_dir=logdir, profile_batch=(10, 20))</code>{" "}
          to <code>model.fit</code>.
        </li>
        <li>
          Any TensorFlow code: wrap a few steps in{" "}
          <code>tf.profiler.experimental.start(logdir)</code> …{" "}
          <code>tf.profiler.experimental.stop()</code>.
        </li>
        <li>
          A running program that started <code>tf.profiler.experimental.server.start(port)</code>:
          use Capture profile.
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
