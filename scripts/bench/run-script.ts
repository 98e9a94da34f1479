/** Runs a bench script's `main`: exit 0 when it resolves, 1 with the error when it throws. */
export function runScript(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}

/** The whole numbers of argv[2…] (defaults for those not given), or exit 2 with `usage` when one is not whole or fails `ok`. */
export function wholeArgs(
  defaults: number[],
  usage: string,
  ok: (values: number[]) => boolean = (v) => v.every((n) => n > 0),
): number[] {
  const values = defaults.map((d, i) => Number(process.argv[2 + i] ?? d));
  if (!values.every((n) => Number.isInteger(n)) || !ok(values)) {
    console.error(`error: give ${usage}, not ${process.argv.slice(2).join(' ')}`);
    process.exit(2);
  }
  return values;
}
