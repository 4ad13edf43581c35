export { startScriptedLlm } from './scripted-llm';
export type {
  ScriptedCall,
  ScriptedErrorAnswer,
  ScriptedLlm,
  ScriptedLlmOptions,
  ScriptedMessage,
  ScriptedRequest,
  ScriptedRespond,
} from './scripted-llm';
export { startFakeSearxng } from './fake-searxng';
export type { FakeSearxng, FakeSearxngOptions, FakeSearxngResult } from './fake-searxng';
export { defaultInstance } from './json-default';
