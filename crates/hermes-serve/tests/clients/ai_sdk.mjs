// The AI SDK (`ai` generateText) holding a two-turn tool conversation through the gateway:
// each turn asks for two calls of the harmless tool `now` (`[tools=2]`), stops after at most
// five steps, retries nothing; the second turn appends the first turn's `response.messages`.
// Reads {provider, base_url, key, model} as JSON on stdin, where provider is `openai-chat`
// (`@ai-sdk/openai` `.chat()`), `openai-compatible` (`@ai-sdk/openai-compatible`) or
// `anthropic` (`@ai-sdk/anthropic`, thinking on); prints what it saw as JSON on stdout.
// It must sit next to the node_modules it imports (`cargo xtask clients` installs them).
import { generateText, jsonSchema, stepCountIs, tool } from 'ai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const cfg = JSON.parse(Buffer.concat(chunks).toString('utf8'));

let model;
let providerOptions = {};
switch (cfg.provider) {
  case 'openai-chat':
    model = createOpenAI({ baseURL: cfg.base_url, apiKey: cfg.key }).chat(cfg.model);
    break;
  case 'openai-compatible':
    model = createOpenAICompatible({ name: 'gateway', baseURL: cfg.base_url, apiKey: cfg.key })
      .chatModel(cfg.model);
    break;
  case 'anthropic':
    model = createAnthropic({ baseURL: cfg.base_url, apiKey: cfg.key })(cfg.model);
    providerOptions = { anthropic: { thinking: { type: 'enabled', budgetTokens: 1024 } } };
    break;
  default:
    throw new Error(`unknown provider ${cfg.provider}`);
}

let calls = 0;
const tools = {
  now: tool({
    description: 'The current time',
    inputSchema: jsonSchema({ type: 'object', properties: {}, additionalProperties: false }),
    execute: async () => {
      calls += 1;
      return `It is 12:0${calls} UTC.`;
    },
  }),
};

const messages = [];
const turns = [];
for (const prompt of ['What time is it? [tools=2]', 'And what time is it now? [tools=2]']) {
  messages.push({ role: 'user', content: prompt });
  const result = await generateText({
    model,
    messages,
    tools,
    stopWhen: stepCountIs(5),
    maxRetries: 0,
    maxOutputTokens: 4096,
    providerOptions,
  });
  messages.push(...result.response.messages);
  turns.push({
    text: result.text,
    finish: result.finishReason,
    steps: result.steps.length,
    tool_calls: result.steps.flatMap((s) => s.toolCalls.map((c) => c.toolName)),
    reasoning: result.steps.map((s) => s.reasoningText ?? '').join(''),
  });
}
console.log(JSON.stringify({ turns, tool_runs: calls }));
