// The public REST API, called with the tab's key. The key lives in sessionStorage (this tab only, gone
// when it closes), is sent only as `Authorization: Bearer`, and never appears in a URL.

const KEY = "engram.inspector.key";

export class ApiError extends Error {
  /** `code` and `detail` are the API's error shape: {"error": code, "detail": text}. */
  constructor(status, code, detail) {
    super(`${code}: ${detail}`);
    this.status = status;
    this.code = code;
    this.detail = detail;
  }
}

export const session = {
  key: () => sessionStorage.getItem(KEY),
  signIn: (key) => sessionStorage.setItem(KEY, key),
  signOut: () => sessionStorage.removeItem(KEY),
};

/** "?a=1&b=x" from an object, leaving out empty values. */
export function query(params = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === null || v === undefined || v === "") continue;
    q.set(k, String(v));
  }
  const text = q.toString();
  return text ? `?${text}` : "";
}

async function errorOf(response) {
  const text = await response.text();
  try {
    const body = JSON.parse(text);
    if (body && typeof body.error === "string") {
      return new ApiError(response.status, body.error, String(body.detail ?? ""));
    }
  } catch {
    // Not the API's error shape (a proxy's page, say): show the status and the start of the text.
  }
  return new ApiError(response.status, `http_${response.status}`, text.slice(0, 200) || response.statusText);
}

/**
 * One call. `body`: an object (sent as JSON), a string or Blob (sent as is), or undefined.
 * `as`: "json" (default), "text" or "blob". Throws ApiError on any non-2xx and on network failure.
 */
export async function call(method, path, { body, as = "json", key = session.key() } = {}) {
  const headers = { Accept: as === "json" ? "application/json" : "*/*" };
  if (key) headers.Authorization = `Bearer ${key}`;
  let payload = body;
  if (body !== undefined && typeof body !== "string" && !(body instanceof Blob)) {
    payload = JSON.stringify(body);
  }
  if (payload !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(path, { method, headers, body: payload, credentials: "omit", cache: "no-store" });
  } catch (err) {
    throw new ApiError(0, "network_error", `the service could not be reached (${err.message})`);
  }
  if (!response.ok) throw await errorOf(response);
  if (as === "text") return response.text();
  if (as === "blob") return response.blob();
  return response.json();
}

export const api = {
  get: (path, params, opts) => call("GET", path + query(params), opts),
  post: (path, body, opts) => call("POST", path, { ...opts, body }),
  patch: (path, body) => call("PATCH", path, { body }),
  del: (path, params) => call("DELETE", path + query(params)),
};

/** Every page of a list endpoint, up to `max` items (the pickers show whole lists). */
export async function all(path, params = {}, max = 2000) {
  const items = [];
  let cursor = null;
  do {
    const page = await api.get(path, { ...params, limit: 500, cursor });
    items.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor && items.length < max);
  return { items, truncated: Boolean(cursor) };
}

export const enc = encodeURIComponent;
