/**
 * Capture Profile: the dialog that asks running programs' profiler servers for a trace.
 *
 * The program must have started a profiler server: TensorFlow's
 * `tf.profiler.experimental.server.start(port)` or JAX's `jax.profiler.start_server(port)`
 * (both shown in the dialog's hint, `capture-how-to`). The dialog POSTs
 * its fields to the `capture_profile` route (docs/api.md), shows a progress state (elapsed
 * time against the capture's duration) while the route runs, then the result or the error.
 * On success it calls `onCaptured(run)`: the app re-fetches the run list and selects the new
 * run, without a reload. The fields keep their values between openings; closing the dialog
 * while a capture runs does not cancel it (its result still selects the new run).
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { postForm, routeUrl } from "../api";

/** The route's answer on success (docs/api.md, capture_profile). */
export interface CaptureAnswer {
  readonly result: string;
  readonly run: string;
  readonly hosts: readonly string[];
  readonly warnings: readonly string[];
}

type Phase =
  | { readonly state: "idle" }
  | { readonly state: "running"; readonly startedMs: number; readonly expectedMs: number }
  | { readonly state: "done"; readonly answer: CaptureAnswer }
  | { readonly state: "error"; readonly message: string };

interface Fields {
  readonly service_addr: string;
  readonly duration: string;
  readonly num_retry: string;
  readonly host_tracer_level: string;
  readonly device_tracer_level: string;
  readonly python_tracer_level: string;
  readonly delay: string;
}

const DEFAULT_FIELDS: Fields = {
  service_addr: "",
  duration: "2000",
  num_retry: "3",
  host_tracer_level: "2",
  device_tracer_level: "1",
  python_tracer_level: "0",
  delay: "0",
};

const HOST_LEVELS: readonly (readonly [string, string])[] = [
  ["0", "0: off"],
  ["1", "1: critical"],
  ["2", "2: info"],
  ["3", "3: verbose"],
];
const ON_OFF: readonly (readonly [string, string])[] = [
  ["0", "0: off"],
  ["1", "1: on"],
];

export function CaptureButton({ onClick }: { readonly onClick: () => void }) {
  return (
    <button
      type="button"
      class="capture-button"
      data-testid="capture-button"
      title="Capture a profile from a running program that started a profiler server (tf.profiler.experimental.server.start(port) or jax.profiler.start_server(port))"
      onClick={onClick}
    >
      Capture profile
    </button>
  );
}

export interface CaptureDialogProps {
  readonly open: boolean;
  readonly onClose: () => void;
  readonly onCaptured: (run: string) => void;
}

export function CaptureDialog({ open, onClose, onCaptured }: CaptureDialogProps) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [fields, setFields] = useState<Fields>(DEFAULT_FIELDS);
  const [phase, setPhase] = useState<Phase>({ state: "idle" });
  const [nowMs, setNowMs] = useState(() => Date.now());

  useEffect(() => {
    const element = dialog.current;
    if (element === null) return;
    if (open && !element.open) {
      if (typeof element.showModal === "function") element.showModal();
      else element.setAttribute("open", "");
    } else if (!open && element.open) {
      element.close();
    }
  }, [open]);

  const running = phase.state === "running";
  useEffect(() => {
    if (!running) return undefined;
    const timer = window.setInterval(() => setNowMs(Date.now()), 250);
    return () => window.clearInterval(timer);
  }, [running]);

  const set = (key: keyof Fields) => (event: Event) => {
    const value = (event.currentTarget as HTMLInputElement | HTMLSelectElement).value;
    setFields((previous) => ({ ...previous, [key]: value }));
  };

  const submit = (event: Event): void => {
    event.preventDefault();
    if (running) return;
    const expectedMs = (Number(fields.duration) || 0) + (Number(fields.delay) || 0);
    const startedMs = Date.now();
    setNowMs(startedMs);
    setPhase({ state: "running", startedMs, expectedMs });
    postForm<CaptureAnswer>(routeUrl("capture_profile"), { ...fields }).then(
      (answer) => {
        setPhase({ state: "done", answer });
        if (typeof answer.run === "string" && answer.run) onCaptured(answer.run);
      },
      (error: unknown) => {
        setPhase({
          state: "error",
          message: error instanceof Error ? error.message : String(error),
        });
      },
    );
  };

  return (
    <dialog
      ref={dialog}
      class="capture-dialog"
      data-testid="capture-dialog"
      aria-labelledby="tbp-capture-title"
      onClose={onClose}
      onCancel={(event) => {
        event.preventDefault();
        onClose();
      }}
    >
      <form class="capture-form" onSubmit={submit}>
        <h2 id="tbp-capture-title">Capture profile</h2>
        <p class="hint" data-testid="capture-how-to">
          From a running program that started a profiler server: TensorFlow{" "}
          <code>tf.profiler.experimental.server.start(9999)</code>, JAX{" "}
          <code>jax.profiler.start_server(9999)</code>; then enter <code>localhost:9999</code>.
          Several addresses, separated by commas, are captured at the same time into one run.
        </p>
        <label class="capture-field capture-wide">
          <span>Profile service URL(s)</span>
          <input
            type="text"
            data-testid="capture-addresses"
            placeholder="localhost:6009, grpc://10.0.0.2:6009"
            required
            value={fields.service_addr}
            onInput={set("service_addr")}
          />
        </label>
        <div class="capture-grid">
          <NumberField
            label="Duration (ms)"
            testid="capture-duration"
            min={1}
            value={fields.duration}
            onInput={set("duration")}
          />
          <NumberField
            label="Retries when empty"
            testid="capture-retries"
            min={0}
            max={10}
            value={fields.num_retry}
            onInput={set("num_retry")}
          />
          <NumberField
            label="Delay (ms)"
            testid="capture-delay"
            min={0}
            value={fields.delay}
            onInput={set("delay")}
          />
          <LevelField
            label="Host trace level"
            testid="capture-host-level"
            options={HOST_LEVELS}
            value={fields.host_tracer_level}
            onChange={set("host_tracer_level")}
          />
          <LevelField
            label="Device trace level"
            testid="capture-device-level"
            options={ON_OFF}
            value={fields.device_tracer_level}
            onChange={set("device_tracer_level")}
          />
          <LevelField
            label="Python trace level"
            testid="capture-python-level"
            options={ON_OFF}
            value={fields.python_tracer_level}
            onChange={set("python_tracer_level")}
          />
        </div>
        <CaptureStatus phase={phase} nowMs={nowMs} />
        <div class="capture-actions">
          <button type="button" data-testid="capture-close" onClick={onClose}>
            Close
          </button>
          <button
            type="submit"
            class="capture-submit"
            data-testid="capture-submit"
            disabled={running}
          >
            {running ? "Capturing…" : "Capture"}
          </button>
        </div>
      </form>
    </dialog>
  );
}

function CaptureStatus({ phase, nowMs }: { readonly phase: Phase; readonly nowMs: number }) {
  if (phase.state === "idle") return null;
  if (phase.state === "running") {
    const elapsedMs = Math.max(0, nowMs - phase.startedMs);
    const tracing = elapsedMs < phase.expectedMs;
    return (
      <div class="capture-status capture-running" role="status" data-testid="capture-progress">
        <span class="spinner" aria-hidden="true" />
        <span>
          {tracing
            ? `Tracing… ${(elapsedMs / 1000).toFixed(1)} of ${(phase.expectedMs / 1000).toFixed(1)} s`
            : `Receiving the trace… ${(elapsedMs / 1000).toFixed(1)} s`}
        </span>
        <progress
          max={Math.max(1, phase.expectedMs)}
          value={Math.min(elapsedMs, phase.expectedMs)}
        />
      </div>
    );
  }
  if (phase.state === "error")
    return (
      <div class="capture-status capture-error" role="alert">
        <strong>Capture failed.</strong>{" "}
        <span class="error-text" data-testid="capture-error">
          {phase.message}
        </span>
      </div>
    );
  return (
    <div class="capture-status capture-done" role="status">
      <span data-testid="capture-result">{phase.answer.result}</span>
      <span class="hint"> The new run is selected.</span>
    </div>
  );
}

interface NumberFieldProps {
  readonly label: string;
  readonly testid: string;
  readonly min: number;
  readonly max?: number;
  readonly value: string;
  readonly onInput: (event: Event) => void;
}

function NumberField({ label, testid, min, max, value, onInput }: NumberFieldProps) {
  return (
    <label class="capture-field">
      <span>{label}</span>
      <input
        type="number"
        data-testid={testid}
        min={min}
        {...(max !== undefined ? { max } : {})}
        step={1}
        required
        value={value}
        onInput={onInput}
      />
    </label>
  );
}

interface LevelFieldProps {
  readonly label: string;
  readonly testid: string;
  readonly options: readonly (readonly [string, string])[];
  readonly value: string;
  readonly onChange: (event: Event) => void;
}

function LevelField({ label, testid, options, value, onChange }: LevelFieldProps) {
  return (
    <label class="capture-field">
      <span>{label}</span>
      <select data-testid={testid} value={value} onChange={onChange}>
        {options.map(([optionValue, text]) => (
          <option value={optionValue} key={optionValue}>
            {text}
          </option>
        ))}
      </select>
    </label>
  );
}
