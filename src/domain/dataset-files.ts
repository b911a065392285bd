/**
 * Dataset files (JSONL and CSV) read as a stream of byte chunks into rows, holding at most one block
 * of lines at a time, so memory stays flat in the file's size. Every fault names its line: bytes that
 * are not UTF-8, a JSONL line that is not a JSON object, a broken CSV record, a file over the limit.
 */
import { isUtf8 } from 'node:buffer';
import { once } from 'node:events';
import { parse as parseCsv } from 'csv-parse';
import { ValidationError } from './errors.ts';
import { type DatasetValues, datasetValues } from './datasets.ts';
import { invalidUtf8At } from './text.ts';

export type DatasetFileFormat = 'jsonl' | 'csv';

/** A row of a file with the (1-based) line it ends on. */
export interface FileRow {
  line: number;
  values: DatasetValues;
}

/** The longest line (or CSV record) a file may hold. */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;

/** A 422 naming the line of a dataset file at fault. */
export function fileError(line: number, msg: string): ValidationError {
  return new ValidationError({
    loc: ['body', 'file', 'line', line],
    msg: `Line ${line}: ${msg}`,
    type: 'value_error',
    ctx: { line },
  });
}

const NEWLINE = 0x0a;

/** Newlines in `bytes[from, to)`. */
function countLines(bytes: Buffer, from: number, to: number): number {
  let n = 0;
  for (let i = bytes.indexOf(NEWLINE, from); i >= 0 && i < to; i = bytes.indexOf(NEWLINE, i + 1)) n++;
  return n;
}

/**
 * The file as blocks of whole lines of text (each block but the last ends with a newline), checked
 * to be UTF-8 and within `maxBytes`. `firstLine` is the number of the block's first line.
 */
export async function* utf8Blocks(
  chunks: AsyncIterable<Buffer>,
  maxBytes: number,
): AsyncGenerator<{ text: string; firstLine: number }> {
  let carry: Buffer = Buffer.alloc(0);
  let line = 1;
  let total = 0;
  const block = (bytes: Buffer) => {
    if (!isUtf8(bytes)) {
      const at = invalidUtf8At(bytes);
      const hex = bytes[at].toString(16).toUpperCase().padStart(2, '0');
      throw fileError(
        line + countLines(bytes, 0, at),
        `byte 0x${hex} is not valid UTF-8 (a dataset file must be UTF-8)`,
      );
    }
    const out = { text: bytes.toString('utf8'), firstLine: line };
    line += countLines(bytes, 0, bytes.length);
    return out;
  };
  const tooLarge = () => fileError(line, `the file is larger than the limit of ${maxBytes} bytes`);
  try {
    for await (const chunk of chunks) {
      total += chunk.length;
      const data = carry.length ? Buffer.concat([carry, chunk]) : chunk;
      if (total > maxBytes) {
        line += countLines(data, 0, data.length);
        throw tooLarge();
      }
      const cut = data.lastIndexOf(NEWLINE);
      if (cut < 0) {
        if (data.length > MAX_LINE_BYTES)
          throw fileError(line, `the line is longer than ${MAX_LINE_BYTES} bytes`);
        carry = data;
        continue;
      }
      carry = data.subarray(cut + 1);
      yield block(data.subarray(0, cut + 1));
    }
  } catch (err) {
    // @fastify/multipart ends a file over its limit with this error.
    if ((err as { code?: string }).code === 'FST_REQ_FILE_TOO_LARGE') throw tooLarge();
    throw err;
  }
  if (carry.length) yield block(carry);
}

/** Rows of a JSONL file: one JSON object a line; blank lines are skipped. */
async function* jsonlRows(chunks: AsyncIterable<Buffer>, maxBytes: number): AsyncGenerator<FileRow[]> {
  for await (const { text, firstLine } of utf8Blocks(chunks, maxBytes)) {
    const rows: FileRow[] = [];
    const lines = text.split('\n');
    for (let i = 0; i < lines.length; i++) {
      const line = firstLine + i;
      const t = (line === 1 ? lines[i].replace(/^\uFEFF/, '') : lines[i]).trim();
      if (t === '') continue;
      let obj: unknown;
      try {
        obj = JSON.parse(t);
      } catch (err) {
        throw fileError(line, `not valid JSON (${err instanceof SyntaxError ? 'syntax error' : 'too deep'})`);
      }
      if (obj === null || typeof obj !== 'object' || Array.isArray(obj))
        throw fileError(
          line,
          `a JSONL line must be a JSON object, not ${Array.isArray(obj) ? 'a list' : typeof obj === 'object' ? 'null' : `a ${typeof obj}`}`,
        );
      try {
        rows.push({ line, values: datasetValues(obj as Record<string, unknown>) });
      } catch {
        throw fileError(line, 'the object is nested too deeply');
      }
    }
    if (rows.length) yield rows;
  }
}

/** Rows of a CSV file (RFC 4180, a header line naming the columns; csv-parse). */
async function* csvRows(chunks: AsyncIterable<Buffer>, maxBytes: number): AsyncGenerator<FileRow[]> {
  const parser = parseCsv({
    bom: true,
    columns: (header: string[]) => {
      if (header.some((h) => h === '')) throw fileError(1, 'every column of the header needs a name');
      const dup = header.find((h, i) => header.indexOf(h) !== i);
      if (dup !== undefined) throw fileError(1, `the column name '${dup}' appears twice in the header`);
      return header;
    },
    skip_empty_lines: true,
    info: true,
    max_record_size: MAX_LINE_BYTES,
  });
  let fault: unknown = null;
  const feed = (async () => {
    for await (const { text } of utf8Blocks(chunks, maxBytes)) {
      if (!parser.write(text)) await once(parser, 'drain');
    }
    parser.end();
  })().catch((err) => {
    fault = err;
    parser.destroy(err);
  });
  try {
    let rows: FileRow[] = [];
    for await (const { record, info } of parser as AsyncIterable<{
      record: Record<string, string>;
      info: { lines: number };
    }>) {
      rows.push({ line: info.lines, values: datasetValues(record) });
      if (rows.length >= 500) {
        yield rows;
        rows = [];
      }
    }
    if (rows.length) yield rows;
  } catch (err) {
    if (fault) throw fault;
    if (err instanceof ValidationError) throw err;
    const e = err as { lines?: number; message?: string; code?: string };
    throw fileError(e.lines ?? 0, `not a valid CSV record (${csvReason(e)})`);
  } finally {
    parser.destroy();
    await feed;
  }
}

/** csv-parse's reason in words, without its quote of the record (which may hold anything). */
function csvReason(e: { code?: string; message?: string }): string {
  switch (e.code) {
    case 'CSV_RECORD_INCONSISTENT_FIELDS_LENGTH':
    case 'CSV_RECORD_INCONSISTENT_COLUMNS':
      return 'its number of fields differs from the header';
    case 'CSV_QUOTE_NOT_CLOSED':
      return 'a quoted field is not closed';
    case 'CSV_INVALID_CLOSING_QUOTE':
      return 'a closing quote is followed by other characters';
    case 'CSV_MAX_RECORD_SIZE':
      return `the record is longer than ${MAX_LINE_BYTES} bytes`;
    default:
      return (e.message ?? 'parse error').split(':')[0];
  }
}

/** Rows of a dataset file in batches; faults throw a 422 naming the line. */
export function fileRows(
  format: DatasetFileFormat,
  chunks: AsyncIterable<Buffer>,
  maxBytes: number,
): AsyncGenerator<FileRow[]> {
  return format === 'csv' ? csvRows(chunks, maxBytes) : jsonlRows(chunks, maxBytes);
}
