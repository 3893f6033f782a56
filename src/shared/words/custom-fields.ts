// A submission's custom fields as stored and as its claim loads them: a word of its own, so that the
// delivery state machine, which comes before the submissions feature, can name it.

/** Custom fields keep their arrival order and repeated names: a list of [name, value] pairs. */
export type CustomFields = Array<[name: string, value: string]>;
