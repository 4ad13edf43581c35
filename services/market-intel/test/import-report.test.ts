import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { applyMigrations, resetDatabase } from '@repo/db-migrate';
import type { Database } from '@repo/service-kit';
import { testDatabaseUrl } from '@repo/service-kit/testing';
import { openDatabase, type Db } from '../src/data/prisma';
import { parseReportFile, ReportFileError } from '../src/domain/report-file';
import { buildReport } from './support/factories';

const run = promisify(execFile);
const DATABASE_URL = testDatabaseUrl('market_intel_import_test');
const CLI = path.join(__dirname, '../src/entry-points/cli/import-report.ts');
const SAMPLE = path.join(__dirname, '../fixtures/sample-report.json');
let database: Database<Db>;
let db: Db;
let dir: string;

async function importFile(
  file: string,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(
      'pnpm',
      ['exec', 'tsx', '--conditions=@repo/source', CLI, file, ...args],
      {
        env: { ...process.env, DATABASE_URL },
        cwd: path.join(__dirname, '..'),
      },
    );
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

async function counts(): Promise<{ reports: number; sectors: number }> {
  const [r] = await db.$queryRawUnsafe<{ reports: bigint; sectors: bigint }[]>(
    'SELECT (SELECT count(*) FROM scan_reports) AS reports, (SELECT count(*) FROM sector_reports) AS sectors',
  );
  return { reports: Number(r?.reports), sectors: Number(r?.sectors) };
}

beforeAll(async () => {
  await resetDatabase(DATABASE_URL);
  await applyMigrations({
    databaseUrl: DATABASE_URL,
    migrationsDir: path.join(__dirname, '../prisma/migrations'),
    log: { info: () => undefined, warn: () => undefined },
  });
  database = openDatabase(DATABASE_URL, 2);
  db = database.prisma;
  dir = await mkdtemp(path.join(os.tmpdir(), 'import-report-'));
});
afterAll(() => database.close());

describe('import-report CLI', () => {
  it('When the shipped sample is imported, then every sector is stored; importing it again changes nothing', async () => {
    const first = await importFile(SAMPLE);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/Imported report .* \(fintech, dev-tools, climate\)/);
    expect(await counts()).toEqual({ reports: 1, sectors: 3 });
    const again = await importFile(SAMPLE);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/Already imported/);
    expect(await counts()).toEqual({ reports: 1, sectors: 3 });
  }, 60_000);

  it('When a field deep in the file is wrong, then the line and field are named and nothing is stored', async () => {
    const report = buildReport();
    const text = JSON.stringify(report, null, 2).replace(
      '"severity": "critical"',
      '"severity": "apocalyptic"',
    );
    const file = path.join(dir, 'bad.json');
    await writeFile(file, text);
    const line = text.split('\n').findIndex((l) => l.includes('apocalyptic')) + 1;
    const before = await counts();
    const result = await importFile(file);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`line ${line}, sectors.0.gaps.1.pain_signals.0.severity`);
    expect(await counts()).toEqual(before);
  }, 60_000);

  it('When the second sector is broken, then the first is not stored either', async () => {
    const report = buildReport();
    const broken = JSON.parse(JSON.stringify(report)) as { sectors: { keywords: unknown }[] };
    if (broken.sectors[1]) broken.sectors[1].keywords = [{ keyword: 'x', count: -1 }];
    const file = path.join(dir, 'half.json');
    await writeFile(file, JSON.stringify(broken, null, 2));
    const before = await counts();
    const result = await importFile(file);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/sectors\.1\.keywords\.0\.count/);
    expect(await counts()).toEqual(before);
  }, 60_000);
});

describe('parseReportFile', () => {
  it('When the JSON is malformed, then the syntax error is located by line', () => {
    expect.assertions(2);
    try {
      parseReportFile('{\n  "generatedAt": "2026-01-01T00:00:00Z",\n  "sectors": [,]\n}', 'x.json');
    } catch (err) {
      expect(err).toBeInstanceOf(ReportFileError);
      expect((err as ReportFileError).problems[0]).toMatchObject({ line: 3, field: '(syntax)' });
    }
  });

  it('When a required field is missing, then its parent object line is named', () => {
    const text = JSON.stringify({ ...buildReport(), generatedAt: undefined }, null, 2);
    expect(() => parseReportFile(text, 'x.json')).toThrow(/line 1, generatedAt/);
  });

  it('When a sector appears twice, then it is refused', () => {
    const report = buildReport();
    const text = JSON.stringify({ ...report, sectors: [report.sectors[0], report.sectors[0]] }, null, 2);
    expect(() => parseReportFile(text, 'x.json')).toThrow(/appears twice/);
  });
});
