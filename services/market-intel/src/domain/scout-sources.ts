import { readFileSync } from 'node:fs';
import { ScoutSourcesFile } from '@repo/compute';

/** Thrown by {@link loadSourcesFile}: the file is missing, not JSON, or not a valid sources file. */
export class SourcesFileError extends Error {
  /**
   * @param file the file name
   * @param problems one line per problem (`field: message`)
   */
  constructor(file: string, problems: string[]) {
    super(`${file} is not a valid scout sources file:\n${problems.map((p) => `  ${p}`).join('\n')}`);
    this.name = 'SourcesFileError';
  }
}

/**
 * Reads the scout sources file (README, "Scout scans"): per sector tag, its news feeds (RSS 2.0 / Atom)
 * and discussion searches, validated with `ScoutSourcesFile`.
 * @param file path of the JSON file
 * @throws SourcesFileError naming every problem
 */
export function loadSourcesFile(file: string): ScoutSourcesFile {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new SourcesFileError(file, [`(file): ${(err as Error).message}`]);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new SourcesFileError(file, [`(syntax): ${(err as Error).message}`]);
  }
  const parsed = ScoutSourcesFile.safeParse(json);
  if (parsed.success) return parsed.data;
  throw new SourcesFileError(
    file,
    parsed.error.issues.map(
      (i) => `${i.path.length ? i.path.map(String).join('.') : '(root)'}: ${i.message}`,
    ),
  );
}
