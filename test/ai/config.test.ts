import test from 'ava';
import { chatCompletionsUrl } from '../../src/ai/openai.js';
import { aiConfigSchema, resolveAiSettings } from '../../src/ai/settings.js';

test('resolveAiSettings: defaults, layering (later wins) and the hard cap', (t) => {
  t.deepEqual(resolveAiSettings(), { enabled: false, model: undefined, maxScoreDelta: 15, timeoutMs: 300, allowFields: [] });
  t.deepEqual(resolveAiSettings({}), { enabled: true, model: undefined, maxScoreDelta: 15, timeoutMs: 300, allowFields: [] });
  t.deepEqual(resolveAiSettings({ enabled: true, model: 'a', timeoutMs: 500 }, undefined, { model: 'b', maxScoreDelta: 99, allowFields: ['actor.id'] }), {
    enabled: true,
    model: 'b',
    maxScoreDelta: 30,
    timeoutMs: 500,
    allowFields: ['actor.id'],
  });
  t.false(resolveAiSettings({ enabled: true }, { enabled: false }).enabled);
});

test('aiConfigSchema rejects unknown keys, a delta over 30 and unknown allowFields', (t) => {
  t.notThrows(() => aiConfigSchema.validateSync({ enabled: true, model: 'llama3.1:8b', maxScoreDelta: 20, timeoutMs: 250, allowFields: ['resource.id', 'requestData.amount'] }));
  t.throws(() => aiConfigSchema.validateSync({ maxScoreDelta: 31 }));
  t.throws(() => aiConfigSchema.validateSync({ allowFields: ['session.ipAddress'] }));
  t.throws(() => aiConfigSchema.validateSync({ enabeld: true }));
  t.throws(() => aiConfigSchema.validateSync({ timeoutMs: '300' }));
});

test('chatCompletionsUrl accepts a base URL or a full endpoint', (t) => {
  t.is(chatCompletionsUrl('http://127.0.0.1:11434/v1'), 'http://127.0.0.1:11434/v1/chat/completions');
  t.is(chatCompletionsUrl('https://api.example.com/v1/'), 'https://api.example.com/v1/chat/completions');
  t.is(chatCompletionsUrl('http://127.0.0.1:8080/v1/chat/completions'), 'http://127.0.0.1:8080/v1/chat/completions');
});
