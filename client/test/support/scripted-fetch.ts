/** One request as the client sent it. */
export interface SentRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: Headers;
  readonly body: string | undefined;
}

/** What the fake answers: a Response, or an Error thrown as a lost connection. */
export type Answer = Response | Error | ((request: SentRequest, signal: AbortSignal) => Promise<Response>);

/** A `fetch` that answers from a script, in order, and records what it was sent. */
export function scriptedFetch(answers: Answer[]): { fetch: typeof fetch; sent: SentRequest[] } {
  const sent: SentRequest[] = [];
  const fake = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const request: SentRequest = {
      method: init.method ?? 'GET',
      url: String(input),
      headers: new Headers(init.headers),
      body: typeof init.body === 'string' ? init.body : undefined,
    };
    sent.push(request);
    const answer = answers.shift();
    if (answer === undefined) throw new Error(`unscripted request ${request.method} ${request.url}`);
    if (answer instanceof Error) throw answer;
    if (typeof answer === 'function') return answer(request, init.signal!);
    return answer;
  };
  return { fetch: fake as typeof fetch, sent };
}

/** A gateway-like JSON answer; `body` is written as is, so int64 literals stay exact. */
export function json(status: number, body: string, headers: Record<string, string> = {}): Response {
  return new Response(body, { status, headers: { 'Content-Type': 'application/json', ...headers } });
}

/** An Error body answer. */
export function errorAnswer(status: number, code: string, headers: Record<string, string> = {}): Response {
  return json(status, JSON.stringify({ code, message: `${code} message`, status }), headers);
}
