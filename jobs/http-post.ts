// One webhook POST: a keep-alive pool per origin, a deadline for the whole exchange, no redirects followed,
// and only the first kilobyte of the answer kept.
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';

export interface PostResult {
  /** Absent when no response came (timeout, refused, reset). */
  status?: number;
  headers?: http.IncomingHttpHeaders;
  /** The first RESPONSE_KEEP_BYTES of the body. */
  body?: string;
  error?: string;
  /** The worker stopped the request (it is shutting down): no fault of the receiver's. */
  aborted?: boolean;
  durationMs: number;
}

const RESPONSE_KEEP_BYTES = 1024;
// Read past what is kept so that the connection can be reused, up to this much; a larger answer closes it.
const RESPONSE_DRAIN_BYTES = 64 * 1024;

export interface Poster {
  post(url: string, headers: Record<string, string>, body: string, signal?: AbortSignal): Promise<PostResult>;
  close(): void;
}

/** `lookup` decides which addresses sockets may connect to (see guardedLookup). */
export function createPoster(options: { timeoutMs: number; lookup?: LookupFunction; maxSocketsPerOrigin?: number }): Poster {
  // An Agent keeps a separate pool of sockets for each origin (host and port).
  const agentOptions = { keepAlive: true, maxSockets: options.maxSocketsPerOrigin ?? 16, lookup: options.lookup };
  const agents = { 'http:': new http.Agent(agentOptions), 'https:': new https.Agent(agentOptions) };

  function post(url: string, headers: Record<string, string>, body: string, signal?: AbortSignal): Promise<PostResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    return new Promise((resolve) => {
      let settled = false;
      const finish = (result: Omit<PostResult, 'durationMs'>) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        signal?.removeEventListener('abort', abort);
        resolve({ ...result, durationMs: elapsed() });
      };
      const target = new URL(url);
      const transport = target.protocol === 'https:' ? https : http;
      const request = transport.request(target, {
        method: 'POST',
        agent: agents[target.protocol as 'http:' | 'https:'],
        headers: { ...headers, 'Content-Length': String(Buffer.byteLength(body)) },
      });
      const deadline = setTimeout(() => {
        request.destroy();
        finish({ error: `timed out after ${options.timeoutMs} ms` });
      }, options.timeoutMs);
      const abort = () => {
        request.destroy();
        finish({ error: 'aborted: the worker is shutting down', aborted: true });
      };
      if (signal?.aborted) abort();
      signal?.addEventListener('abort', abort);
      request.on('error', (error) => finish({ error: error.message || String(error) }));
      request.on('response', (response) => {
        const kept: Buffer[] = [];
        let read = 0;
        response.on('data', (chunk: Buffer) => {
          if (read < RESPONSE_KEEP_BYTES) kept.push(chunk.subarray(0, RESPONSE_KEEP_BYTES - read));
          read += chunk.length;
          if (read > RESPONSE_DRAIN_BYTES) response.destroy();
        });
        const done = () => finish({
          status: response.statusCode,
          headers: response.headers,
          body: Buffer.concat(kept).toString('utf8'),
        });
        response.on('end', done);
        response.on('close', done);
        response.on('error', done);
      });
      request.end(body);
    });
  }

  return {
    post,
    close: () => { agents['http:'].destroy(); agents['https:'].destroy(); },
  };
}
