// What every deployment check uses: the repository root, the list problems are reported into, and
// navigation of parsed YAML/JSON documents (scripts/check-deploy.ts, scripts/check-deploy-kubernetes.ts,
// scripts/check-deploy-render.ts).
import fs from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';

/** The repository root. */
export const ROOT = path.resolve(__dirname, '..');

/** Reads a file of the repository (path relative to {@link ROOT}) as UTF-8. */
export function read(rel: string): string {
  return fs.readFileSync(path.join(ROOT, rel), 'utf8');
}

/** Collects problems as `where: message` lines; the checks report into one. */
export class Problems {
  /** The problems found so far, in the order found. */
  readonly list: string[] = [];
  /** Records one problem. */
  add(where: string, message: string): void {
    this.list.push(`${where}: ${message}`);
  }
}

/** A plain object of a parsed YAML/JSON document. */
export type Obj = Record<string, unknown>;
/** `value` when it is a plain object, else undefined. */
export function obj(value: unknown): Obj | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Obj) : undefined;
}
/** `value` when it is an array, else an empty one. */
export function arr(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}
/** Follows object keys and array indexes; undefined as soon as one is missing. */
export function at(value: unknown, ...keys: (string | number)[]): unknown {
  let current = value;
  for (const key of keys) {
    if (typeof key === 'number') current = arr(current)[key];
    else current = obj(current)?.[key];
  }
  return current;
}

/** Every document of a multi-document YAML text that is an object; YAML errors become problems. */
export function yamlDocuments(where: string, text: string, problems: Problems): Obj[] {
  const docs: Obj[] = [];
  for (const doc of parseAllDocuments(text, { merge: true })) {
    if (doc.errors.length > 0) problems.add(where, `YAML: ${doc.errors.map((e) => e.message).join('; ')}`);
    const value = obj(doc.toJS());
    if (value) docs.push(value);
  }
  return docs;
}
