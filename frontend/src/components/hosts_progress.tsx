/**
 * Loading state of a request that reads several hosts of a run: the spinner of `Loading`, and
 * once the request has taken a second, a progress bar of the hosts done / total in its current
 * pass (reading the hosts, analysing them), polled from the `progress` route (docs/api.md)
 * every half second while it is shown.
 *
 * Hooks: hosts-progress (data-done, data-total, data-phase), hosts-progress-bar.
 */
import { useEffect, useState } from "preact/hooks";
import { getJson, routeUrl } from "../api";
import { Loading } from "./states";

const FIRST_POLL_MS = 1000;
const POLL_MS = 500;

interface Progress {
  phase: string | null;
  words: string;
  done: number;
  total: number;
  finished: boolean;
}

export function HostsProgress({ run, what }: { run: string; what: string }) {
  const [progress, setProgress] = useState<Progress | null>(null);
  useEffect(() => {
    let stopped = false;
    let timer = 0;
    const controller = new AbortController();
    const poll = async () => {
      try {
        const answer = await getJson<Progress>(routeUrl("progress", { run }), controller.signal);
        if (!stopped) setProgress(answer);
      } catch {
        // The bar is a courtesy: the request itself reports its errors.
      }
      if (!stopped) timer = window.setTimeout(poll, POLL_MS);
    };
    timer = window.setTimeout(poll, FIRST_POLL_MS);
    return () => {
      stopped = true;
      window.clearTimeout(timer);
      controller.abort();
    };
  }, [run]);

  const shown = progress !== null && progress.phase !== null && progress.total > 1 &&
    !progress.finished;
  return (
    <div class="hosts-progress-state" style={{ display: "flex", flexDirection: "column" }}>
      <Loading what={what} />
      {shown && (
        <div
          class="hosts-progress"
          data-testid="hosts-progress"
          data-done={progress.done}
          data-total={progress.total}
          data-phase={progress.phase}
          style={{ display: "flex", gap: "8px", alignItems: "center", justifyContent: "center" }}
        >
          <progress
            data-testid="hosts-progress-bar"
            max={progress.total}
            value={progress.done}
            aria-label={`${progress.words}: ${progress.done} of ${progress.total}`}
          />
          <span>
            {progress.words}: {progress.done} / {progress.total}
          </span>
        </div>
      )}
    </div>
  );
}
