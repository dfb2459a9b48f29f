/**
 * HTTP client for the plugin's routes (docs/api.md).
 *
 * Every URL is resolved against `import.meta.url`, the address of index.js, which is
 * `<tensorboard>/[experiment/<id>/]data/plugin/profile/index.js` both when TensorBoard
 * imports the module into its plugin iframe and when the standalone page
 * `data/plugin/profile/index.html` loads it. So `runs` is always the plugin's `runs` route,
 * whatever path prefix TensorBoard is served under.
 */

/** An error from a route (non-2xx answer, or no answer), with the message to show. */
export class ApiError extends Error {
  readonly status: number | null;

  constructor(message: string, status: number | null) {
    super(message);
    this.name = "ApiError";
    this.status = status;
  }
}

export type Params = Readonly<Record<string, string>>;

/** The absolute URL of a plugin route, e.g. `routeUrl("hosts", {run, tag})`. */
export function routeUrl(route: string, params: Params = {}): string {
  const url = new URL(route, import.meta.url);
  for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value);
  return url.href;
}

/** The message of an error answer: `{"error": "..."}` where the body has one. */
async function errorMessage(response: Response): Promise<string> {
  const fallback = `${response.status} ${response.statusText}`.trim();
  let text = "";
  try {
    text = await response.text();
  } catch {
    return fallback;
  }
  try {
    const body: unknown = JSON.parse(text);
    if (body !== null && typeof body === "object" && "error" in body) {
      const error = (body as { error: unknown }).error;
      if (typeof error === "string" && error) return error;
    }
  } catch {
    // Not JSON: fall through to the raw text.
  }
  const snippet = text.trim().slice(0, 300);
  return snippet ? `${fallback}: ${snippet}` : fallback;
}

/** Fetches `url` and returns its JSON; rejects with ApiError (or an AbortError on abort). */
async function requestJson<T>(url: string, init: RequestInit): Promise<T> {
  let response: Response;
  try {
    response = await fetch(url, {
      ...init,
      credentials: "same-origin",
      headers: { Accept: "application/json" },
    });
  } catch (error) {
    if (error instanceof DOMException && error.name === "AbortError") throw error;
    throw new ApiError(
      `Could not reach the TensorBoard server (${String(error)}). Is it still running?`,
      null,
    );
  }
  if (!response.ok) throw new ApiError(await errorMessage(response), response.status);
  try {
    return (await response.json()) as T;
  } catch {
    throw new ApiError(`The answer from ${url} is not valid JSON.`, response.status);
  }
}

/** GETs a JSON route; rejects with ApiError (or an AbortError when `signal` aborts). */
export function getJson<T>(url: string, signal?: AbortSignal): Promise<T> {
  return requestJson<T>(url, signal ? { signal } : {});
}

/** POSTs `params` as a form to a route and returns its JSON; rejects with ApiError. */
export function postForm<T>(url: string, params: Params): Promise<T> {
  return requestJson<T>(url, { method: "POST", body: new URLSearchParams(params) });
}
