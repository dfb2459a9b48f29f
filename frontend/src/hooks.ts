/** useJson: fetches a JSON route when its URL changes; stale answers are dropped. */
import { useEffect, useState } from "preact/hooks";
import { ApiError, getJson } from "./api";

export type Fetched<T> =
  | { readonly state: "idle" }
  | { readonly state: "loading" }
  | { readonly state: "ok"; readonly data: T }
  | { readonly state: "error"; readonly error: string; readonly status: number | null };

const IDLE: Fetched<never> = { state: "idle" };
const LOADING: Fetched<never> = { state: "loading" };

/**
 * The answer of `url` (null: nothing to fetch). `reloadToken` refetches when it changes.
 * The result is keyed by URL, so a new URL never shows the previous URL's data.
 */
export function useJson<T>(url: string | null, reloadToken = 0): Fetched<T> {
  const key = url === null ? null : `${reloadToken} ${url}`;
  const [result, setResult] = useState<{ key: string | null; value: Fetched<T> }>({
    key: null,
    value: IDLE,
  });

  useEffect(() => {
    if (url === null) return undefined;
    const controller = new AbortController();
    getJson<T>(url, controller.signal).then(
      (data) => {
        if (!controller.signal.aborted) setResult({ key, value: { state: "ok", data } });
      },
      (error: unknown) => {
        if (controller.signal.aborted) return;
        const status = error instanceof ApiError ? error.status : null;
        const message = error instanceof Error ? error.message : String(error);
        setResult({ key, value: { state: "error", error: message, status } });
      },
    );
    return () => controller.abort();
  }, [key]);

  if (url === null) return IDLE;
  return result.key === key ? result.value : LOADING;
}
