import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { ReportRepository } from '../../data/reports';
import { parseReportFile, ReportFileError, shiftReportToNow } from '../../domain/report-file';
import { runCommand, withDatabase } from './command';

const USAGE = `Usage: import-report <file.json> [--shift-to-now] [--if-empty]

Validates a scan report file and stores it in market-intel's database (DATABASE_URL) in one
transaction. A bad file is refused with the line and field of each problem and nothing is stored.
--shift-to-now moves the report's times so it was generated now (for the shipped sample).
--if-empty imports only when the database holds no report yet.`;

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      'shift-to-now': { type: 'boolean', default: false },
      'if-empty': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const file = positionals[0];
  if (values.help || !file) {
    console.log(USAGE);
    return values.help ? 0 : 2;
  }
  return withDatabase('import-report', async (db) => {
    let report;
    try {
      report = parseReportFile(await readFile(file, 'utf8'), file);
    } catch (err) {
      console.error(err instanceof ReportFileError || err instanceof Error ? err.message : String(err));
      return 1;
    }
    if (values['shift-to-now']) report = shiftReportToNow(report, new Date());
    const reports = new ReportRepository(db);
    if (values['if-empty'] && (await reports.hasAnyReport())) {
      console.log('The database already holds reports; nothing imported (--if-empty)');
      return 0;
    }
    const result = await reports.importReport(report, 'import');
    console.log(
      result.created
        ? `Imported report ${result.id} (${result.sectors.join(', ')}) generated at ${report.generatedAt}`
        : `Already imported as report ${result.id}; nothing changed`,
    );
    return 0;
  });
}

runCommand('import-report', main);
