// OpenAI-compatible chat completions: hosted OpenAI-style APIs, Ollama (/v1), llama.cpp server and
// vLLM all speak it, so this one adapter covers hosted and local models.
import { ModelHttpError, ModelOutputError, type ModelAdapter } from './adapter.js';
import type { AdvisoryView, AiSettings } from './types.js';

export interface OpenAiAdapterOptions {
  /** Base URL (e.g. https://api.openai.com/v1, http://127.0.0.1:11434/v1) or the full …/chat/completions URL. */
  url: string;
  apiKey?: string;
  /** Injected for tests only; defaults to the global fetch. */
  fetch?: typeof fetch;
}

/** Accepts a base URL or one that already ends with /chat/completions. */
export function chatCompletionsUrl(url: string): string {
  const trimmed = url.trim().replace(/\/+$/, '');
  return /\/chat\/completions$/.test(trimmed) ? trimmed : `${trimmed}/chat/completions`;
}

export function systemPrompt(maxScoreDelta: number): string {
  return [
    'You are a fraud and abuse risk advisor for a transaction protection service.',
    'The user message is a JSON summary of one protected transaction: operation, sensitivity, normalized risk signals (0..1),',
    'the base risk score (0..100) and band, counts and field names. It never contains raw records.',
    `Answer with strict JSON only, no prose and no code fences: {"scoreDelta": number, "rationale": string, "labels": string[]}.`,
    `scoreDelta is an integer between -${maxScoreDelta} and ${maxScoreDelta}: positive raises the risk, negative lowers it, 0 agrees with the base score.`,
    'rationale is at most 200 characters. labels are up to 5 short snake_case tags.',
  ].join(' ');
}

export function createOpenAiAdapter(options: OpenAiAdapterOptions): ModelAdapter {
  const endpoint = chatCompletionsUrl(options.url);
  const doFetch = options.fetch ?? fetch;
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;

  return {
    async complete(view: AdvisoryView, settings: AiSettings, signal: AbortSignal): Promise<unknown> {
      const body = {
        // Omitted when unset: llama.cpp server ignores it; OpenAI, Ollama and vLLM need TPS_AI_MODEL.
        ...(settings.model ? { model: settings.model } : {}),
        messages: [
          { role: 'system', content: systemPrompt(settings.maxScoreDelta) },
          { role: 'user', content: JSON.stringify(view) },
        ],
        response_format: { type: 'json_object' },
        temperature: 0,
      };
      const res = await doFetch(endpoint, { method: 'POST', headers, body: JSON.stringify(body), signal });
      if (!res.ok) {
        await res.body?.cancel().catch(() => undefined);
        throw new ModelHttpError(res.status);
      }
      return parseContent(await res.text());
    },
  };
}

/** Pulls choices[0].message.content out of the envelope and parses it as JSON. */
function parseContent(text: string): unknown {
  let envelope: { choices?: Array<{ message?: { content?: unknown } }> };
  try {
    envelope = JSON.parse(text);
  } catch {
    throw new ModelOutputError('model server answer is not JSON', 'answer_not_json');
  }
  const content = envelope?.choices?.[0]?.message?.content;
  if (typeof content !== 'string') throw new ModelOutputError('no choices[0].message.content in the answer', 'no_content');
  // Some local models wrap JSON in a Markdown fence despite the prompt; the JSON inside is still the answer.
  const unfenced = content.trim().replace(/^```(?:json)?\s*([\s\S]*?)\s*```$/i, '$1');
  try {
    return JSON.parse(unfenced);
  } catch {
    throw new ModelOutputError('model content is not JSON', 'content_not_json');
  }
}
