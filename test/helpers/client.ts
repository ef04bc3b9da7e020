// A small HTTP client for the API under test: JSON in, {status, body, headers} out. Every response is checked
// against the OpenAPI document (contract.ts): one the document does not describe fails the test.
import { API_PREFIX } from '../../server/routes.ts';
import { checkResponse } from './contract.ts';

export interface Response<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface RequestOptions {
  headers?: Record<string, string>;
  /** Sent as given when a string; JSON-encoded otherwise. */
  body?: unknown;
}

export interface Client {
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<Response<T>>;
  get<T = any>(path: string, options?: RequestOptions): Promise<Response<T>>;
  post<T = any>(path: string, body?: unknown, options?: RequestOptions): Promise<Response<T>>;
  patch<T = any>(path: string, body?: unknown, options?: RequestOptions): Promise<Response<T>>;
  delete<T = any>(path: string, options?: RequestOptions): Promise<Response<T>>;
}

/** Paths starting with `/` are relative to the API prefix; full URLs, paths under the prefix and `~/path` (server root) are taken as given. */
function urlFor(baseUrl: string, path: string): string {
  if (/^https?:/.test(path)) return path;
  // A `Link` relative to the API's address.
  if (path.startsWith(`${API_PREFIX}/`)) return baseUrl + path;
  if (path.startsWith('~')) return baseUrl + path.slice(1);
  return baseUrl + API_PREFIX + path;
}

export function client(baseUrl: string, key?: string): Client {
  async function request(method: string, path: string, options: RequestOptions = {}) {
    const headers: Record<string, string> = { ...(key ? { 'X-API-Key': key } : {}), ...options.headers };
    let body: string | undefined;
    if (options.body !== undefined) {
      body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
      headers['Content-Type'] ??= 'application/json';
    }
    const url = urlFor(baseUrl, path);
    const response = await fetch(url, { method, headers, body });
    const text = await response.text();
    const type = response.headers.get('content-type') ?? '';
    const parsed = type.includes('json') && text ? JSON.parse(text) : text;
    checkResponse(method, url, response.status, type, parsed);
    return { status: response.status, headers: response.headers, body: parsed };
  }
  return {
    request,
    get: (path, options) => request('GET', path, options),
    post: (path, body, options) => request('POST', path, { ...options, body }),
    patch: (path, body, options) => request('PATCH', path, { ...options, body }),
    delete: (path, options) => request('DELETE', path, options),
  };
}
