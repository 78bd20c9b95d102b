/** A refusal of the CLI's own (the data directory is busy, no internal token): exit 1, code "busy". */
export class CliError extends Error {
  override name = "CliError";
}
