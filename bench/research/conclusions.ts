/** The prose conclusions of docs/signal-quality.md, written after the single hold-out run. */
export const CONCLUSIONS = `(to be written after the hold-out run)`;
