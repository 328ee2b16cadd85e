// The call records' journal on a SQLite store: each finished call's record is appended to a
// local file (one write(2), as SQLite's WAL write under synchronous=NORMAL is) before its
// answer completes, and the store commits the records behind it in batches. A process killed
// after an answer loses no record: the next start replays the journal into the store.
//
// The journal is a series of segments, files named after the process and a sequence number.
// Appends go to the open segment; a commit seals it (the next append opens a new one), takes
// every record queued, and when the commit succeeds removes the sealed segments. So a
// segment on disk holds records that may not be committed yet, and nothing else.
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import type { CallRecord } from "./call-record.ts";

const SEGMENT = /^records-(\d+)-(\d+)\.jsonl$/;

export interface Leftovers {
  /** the records of the segments a stopped process left, in the order they were written */
  records: CallRecord[];
  /** lines that could not be read back (a write torn by a crash) */
  unreadable: number;
  /** the segments read, to remove once their records are in the store */
  files: string[];
  /** segments left alone: they belong to a process still running */
  busy: string[];
}

/** Whether `pid` names a running process other than this one. */
function alive(pid: number): boolean {
  if (pid === process.pid) return false; // a previous run of a process that got our pid (containers: pid 1)
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

export class RecordJournal {
  /** a file of this machine: nobody else can commit it (a start here replays it) */
  readonly shared = false;
  readonly #dir: string;
  #fd: number | undefined;
  #seq = 0;
  #current: string | undefined;
  /** sealed segments whose records are not known to be committed yet */
  #sealed: string[] = [];

  constructor(dir: string) {
    this.#dir = dir;
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  get dir(): string {
    return this.#dir;
  }

  /** Appends the record; throws if the file cannot be written (the call then fails as store_unavailable). */
  append(record: CallRecord): void {
    if (this.#fd === undefined) {
      this.#current = join(this.#dir, `records-${process.pid}-${++this.#seq}.jsonl`);
      this.#fd = openSync(this.#current, "a", 0o600);
    }
    writeSync(this.#fd, `${JSON.stringify(record)}\n`);
  }

  /**
   * Closes the open segment: every record appended so far is in a sealed segment. Returns
   * the sealed segments, to pass to remove() once every record queued up to now is committed.
   */
  seal(): string[] {
    if (this.#fd !== undefined) {
      closeSync(this.#fd);
      this.#fd = undefined;
      this.#sealed.push(this.#current!);
    }
    return [...this.#sealed];
  }

  /** The records of these segments are in the store: their files go. */
  remove(files: readonly string[]): void {
    for (const file of files) {
      try {
        unlinkSync(file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      }
    }
    this.#sealed = this.#sealed.filter((f) => !files.includes(f));
  }

  /** The segments of processes no longer running (a crash, a kill -9), to replay at start. */
  leftovers(): Leftovers {
    const found: { file: string; pid: number; seq: number }[] = [];
    const busy: string[] = [];
    for (const name of existsSync(this.#dir) ? readdirSync(this.#dir) : []) {
      const m = SEGMENT.exec(name);
      if (!m) continue;
      const file = join(this.#dir, name);
      const pid = Number(m[1]);
      const seq = Number(m[2]);
      // an earlier process of our pid: our own segments must not take its names
      if (pid === process.pid) this.#seq = Math.max(this.#seq, seq);
      if (alive(pid)) busy.push(file);
      else found.push({ file, pid, seq });
    }
    found.sort((a, b) => a.pid - b.pid || a.seq - b.seq);
    const records: CallRecord[] = [];
    let unreadable = 0;
    for (const { file } of found) {
      for (const line of readFileSync(file, "utf8").split("\n")) {
        if (!line) continue;
        try {
          records.push(JSON.parse(line) as CallRecord);
        } catch {
          unreadable++;
        }
      }
    }
    return { records, unreadable, files: found.map((f) => f.file), busy };
  }
}
