//! Command-line interface: every verb, its flags and its help text.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "reprolab",
    version,
    about = "Localise, repair and reproduce faults in deep-learning training programs.",
    long_about = "reprolab runs deep-learning training programs (\"subjects\": a directory with a \
reprolab.toml) many times, safely and fast, and judges the outcomes with sound statistics.\n\n\
Every training runs in a sandbox with a timeout, a memory bound and output caps; results are \
cached in .reprolab/store.db, so repeated or interrupted commands never retrain what they know.\n\n\
Exit codes: 0 ok; 1 the user's program failed or the verdict is negative; 2 usage or input error; \
3 infrastructure (the Python environment, the store, the network or an LLM server). With --json, \
an error is printed on stdout as {\"error\": {\"kind\": \"usage\" | \"input\" | \"infrastructure\" \
| \"program\", \"message\": ...}}.",
    after_help = "Start with:\n  reprolab eval subjects/digits-mlp --runs 10\n  reprolab compare subjects/digits-mlp --b other.json --runs 10\n  reprolab trace subjects/digits-mlp"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct Global {
    /// Print machine-readable JSON on stdout instead of tables.
    #[arg(long, global = true)]
    pub json: bool,
    /// More logging on stderr (-v info, -vv debug, -vvv trace).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// The run store (SQLite). Default: .reprolab/store.db in the current directory.
    #[arg(long, global = true, value_name = "FILE")]
    pub store: Option<PathBuf>,
    /// Use this Python interpreter (it must have torch, numpy, scikit-learn) instead of the
    /// environment reprolab manages.
    #[arg(long, global = true, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// Parallel trainings (in `codegen`: parallel samples). Default: the number of cores, or
    /// REPROLAB_WORKERS when set (e.g. to leave cores to others on a shared machine).
    #[arg(long, short = 'j', global = true, env = "REPROLAB_WORKERS", value_name = "N",
          value_parser = at_least_one)]
    pub workers: Option<usize>,
    /// Retrain even what the store already knows (results are still stored).
    #[arg(long, global = true)]
    pub no_cache: bool,
    /// Where trainings, reproduction scripts and codegen tests run: `local` (warm workers on
    /// this machine) or `ray` (a Ray cluster: --ray-address, else a local Ray head for the
    /// command's lifetime; Ray is installed into the managed environment on first use). With
    /// ray, --workers is the number of evaluation slots (default: every CPU of the cluster).
    #[arg(long, global = true, value_enum, default_value_t = Backend::Local)]
    pub backend: Backend,
    /// The Ray cluster for --backend ray (HOST:PORT of its head, or ray://HOST:10001).
    #[arg(long, global = true, env = "RAY_ADDRESS", value_name = "ADDR")]
    pub ray_address: Option<String>,
}

/// A count that must be positive (workers: 0 would train nothing).
fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// Where trainings run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    Local,
    Ray,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Make a subject of an existing training script: manifest, config, search space, README;
    /// then train it once to check the contract.
    #[command(
        long_about = "Scaffold a subject in DIR from the training script there: find the function \
reprolab calls, train(config, seed) returning {\"search\": ..., \"holdout\": ...} (--entry names \
it when the script has none or several), and write reprolab.toml (name from the directory, \
framework pytorch, metric accuracy/max, limits, a search space with the study's values for the \
hyperparameters it knows: lr, batch_size, epochs, optimizer, activation, loss, ...), config.json \
(the literal values the script reads from its config: config.get(\"lr\", 0.01) or a dict literal) \
and a README.md stub. A command-line script without such a function (argparse, like PyTorch's \
examples) works as it is: config.json gets its options' defaults (settings such as --log-interval \
or --no-cuda keep theirs), reprolab_entry.py runs it with those options and the seed, and the \
script reports its metric with one added line, reprolab.result(search=..., holdout=...). So \
does a script that sets its hyperparameters as top-level constants (LR = 0.01): config.json \
holds them, and the script runs with config.json's values in their place; a Jupyter notebook \
(.ipynb) runs the same way, as the script its code cells make. \
Existing files are kept (and listed) unless --force. Then one training checks the contract and, \
when it fails, says what to change. Exits 0 when the training passes, 1 when it fails.",
        after_help = "Examples:\n  reprolab init my-model\n  reprolab init my-model --entry main.py:fit\n  reprolab init mnist --entry main.py      # an argparse script\n  reprolab eval my-model --runs 10"
    )]
    Init(InitArgs),
    /// Train a subject N times (distinct seeds) and summarise its metric.
    #[command(
        after_help = "Examples:\n  reprolab eval subjects/digits-mlp --runs 10\n  reprolab eval subjects/digits-mlp --config faulty.json --runs 20 --json"
    )]
    Eval(EvalArgs),
    /// Say whether config B is significantly better or worse than config A (or equivalent
    /// within a margin).
    #[command(
        long_about = "Train the subject with config A and config B on the same seeds and compare \
the metric: Wilcoxon signed-rank (paired by seed), Mann-Whitney U, Cohen's d and Vargha-Delaney \
A12. B is better (or worse) when p < 0.05 and |d| >= 0.5, the rule of the fault-localisation \
study; otherwise not significantly different, which does not mean equivalent: --margin M adds a \
TOST (two one-sided Wilcoxon tests) that shows equivalence within ±M. Exits 0 when B is better, \
1 otherwise.",
        after_help = "Examples:\n  reprolab compare subjects/digits-mlp --b subjects/digits-mlp/other.json --runs 10\n  reprolab compare subjects/digits-mlp --b other.json --runs 10 --margin 0.01   # equivalent within ±0.01?"
    )]
    Compare(CompareArgs),
    /// Train once with instrumentation and show the training dynamics per epoch.
    #[command(
        long_about = "Train once with instrumentation: per-epoch loss and accuracy, per-layer gradient \
norms, fraction of dead ReLU units, saturation, weight norms and NaN/Inf flags -- the dynamic signals \
fault localisation uses. Saves them as JSON.",
        after_help = "Example:\n  reprolab trace subjects/digits-mlp --out trace.json"
    )]
    Trace(TraceArgs),
    /// Show the managed Python environment, provisioning it if needed.
    #[command(
        after_help = "Examples:\n  reprolab env\n  reprolab env --python-path   # print the interpreter path only"
    )]
    Env(EnvArgs),
    /// Benchmark: trainings per minute through the warm worker pool vs one fresh Python process
    /// per training.
    #[command(
        name = "bench-exec",
        after_help = "Example:\n  reprolab bench-exec --runs 12"
    )]
    BenchExec(BenchExecArgs),
    /// Benchmark: bug-reproduction runs per minute in warm workers vs one fresh Python process
    /// per run, checking that both observe the same.
    #[command(
        name = "bench-reproduce-exec",
        after_help = "Examples:\n  reprolab bench-reproduce-exec --runs 10\n  reprolab bench-reproduce-exec benchmarks/bugs/03-inplace-autograd/reference.py"
    )]
    BenchReproduceExec(BenchReproduceExecArgs),
    /// Generate DeepCrime-style mutants of a correct subject and keep those statistically killed.
    #[command(
        long_about = "Mutate a correct subject's config with DeepCrime's operators (over the subject's \
search space: every parameter declares the fault type it belongs to), train the original and each \
mutant N times on the same seeds, and keep the mutants that are killed: p < 0.05 (GLM or Wilcoxon) \
and Cohen's d >= 0.5 in the worse direction, then filtered as in the study (not too easy, not too \
hard). HLR and HNE search toward their bound by binary search; the other operators are exhaustive. \
Each kept mutant is written as a faulty subject whose manifest records the ground truth (the \
original config and the fault label, e.g. ACH(2)).",
        after_help = "Examples:\n  reprolab mutate subjects/digits-mlp --operators HLR,ACH,OCH --out benchmarks/faults/artificial\n  reprolab mutate subjects/diabetes-regression --runs 10 --out /tmp/mutants"
    )]
    Mutate(MutateArgs),
    /// List a fault benchmark: fault labels and faulty vs fixed metrics.
    #[command(
        after_help = "Examples:\n  reprolab faults\n  reprolab faults benchmarks/faults/real --measure 20"
    )]
    Faults(FaultsArgs),
    /// Search for a patch of a faulty subject's hyperparameters, validate it, optionally minimise it.
    #[command(
        long_about = "Search for a patch of a faulty subject's config with one engine, optimising the \
metric on the search split (the faulty config is the first trial); then validate the best patch on \
the holdout split with N retrainings against the faulty config: Wilcoxon p, Cohen's d, sigma, the \
improvement rate IR against the ground truth when the manifest has one, complexity (share of \
hyperparameters changed) and AJ (asymmetric Jaccard of fault types). --minimize reduces the patch \
by delta debugging to a 1-minimal set of changes that keeps a significant improvement. The verdict \
is the holdout's: repaired only when the patch is significantly better than the faulty config there \
(p < 0.05, |d| >= 0.5); only then is the patched config written. Exits 0 when repaired, 1 otherwise.",
        after_help = "Examples:\n  reprolab repair benchmarks/faults/real/D7 --engine bohb --budget 10x\n  reprolab repair benchmarks/faults/real/D4 --engine random --trials 30 --minimize"
    )]
    Repair(RepairArgs),
    /// Rank suspected faults (fault type with layers) with evidence and a suggested change.
    #[command(
        long_about = "Localise faults in a subject's training program: static rules over the config and \
the search space (output activation vs loss vs task, missing non-linearities, constant initialisers, \
learning rates far from the optimiser's range, ...) and dynamic monitors over one instrumented \
training with AutoTrainer's and DeepDiagnosis' thresholds (vanishing / exploding gradients, dying \
ReLU, saturation, NaN, stalled or slow training, ...). Prints a ranked list: fault type with layer \
indices (e.g. ACH(1)), confidence, evidence with the observed numbers, and a suggested change.",
        after_help = "Examples:\n  reprolab localize benchmarks/faults/real/D4\n  reprolab localize subjects/digits-mlp --config faulty.json --engine static --json"
    )]
    Localize(LocalizeArgs),
    /// Benchmarks over a fault benchmark, with reports.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Talk to an LLM directly, and list the LLM calls recorded in the store.
    #[command(subcommand)]
    Llm(LlmCommand),
    /// Find alternative ground-truth fixes of a faulty subject (the study's neutrality analysis).
    #[command(
        long_about = "Breadth-first search from the faulty subject's known fix (its [fix] config) over \
configs that differ by one hyperparameter (operators HBS, HLR, HNE, LRM, LAD, LCN, ACH, BCI, WCI, \
LCH, OCH), as Algorithm 1 of the fault-localisation study. Every node is trained --runs times; a \
neighbour is neutral when it is not significantly worse than its parent (GLM p < 0.05 and \
|Cohen's d| >= 0.5), and an alternative ground truth when it is not significantly worse than the \
known fix; the best --top-k neutral neighbours of each node are expanded. Neighbours are trained in \
stages (3, 6, 10 runs) and clearly worse ones stop early. Writes alternatives.json into the \
subject's directory (read only by `bench localize` and `bench repair`) and the neutrality graph as \
JSON, DOT and SVG. Every training is cached: a rerun retrains nothing and a longer budget resumes.",
        after_help = "Examples:\n  reprolab neutrality benchmarks/faults/real/D7 --budget 10m\n  reprolab neutrality benchmarks/faults/artificial/cancer-binary/cancer-binary-HLR-lr-10 --nodes 100 --top-k 3"
    )]
    Neutrality(NeutralityArgs),
    /// Benchmark generated deep-learning code (Deep-Bench style): validate tasks, run answers in
    /// the sandbox, pass@k by stage/task/data, failure taxonomy, reports.
    #[command(subcommand)]
    Codegen(CodegenCommand),
    /// Reproduce a DL bug report as a script judged by running it; `reproduce verify` judges a
    /// script you already have.
    #[command(
        long_about = "Turn a deep-learning bug report into a script that shows the bug, judged by \
running it: the report's exception, warning, NaN, unchanged value or stated number is extracted \
without an LLM; each candidate script runs --runs times (different seeds) in the sandbox with the \
report's library versions, and the verdict is the symptom matching rule of docs/reproduce.md \
(same exception type and key tokens, raised by library code; never the script's own raise or mock). \
Writes DIR/reproduce.py, requirements.txt, observed.txt and verdict.json. Exits 0 when the bug \
was reproduced, 1 when not, 2 on bad input, 3 when the environment or the model failed.\n\n\
REPORT is a text or Markdown file, a JSON object with the text in `bug_report`/`report`/`body`/\
`text`, a bundled bug directory (report.md + bug.json) or RepGen's layout (NNN/bug_report/NNN.txt \
with an optional NNN/code/).",
        after_help = "Examples:\n  reprolab reproduce verify benchmarks/bugs/01-bce-target-size benchmarks/bugs/01-bce-target-size/reference.py\n  reprolab reproduce verify issue.md my_repro.py --package torch==2.15.0 --out /tmp/verdict\n  reprolab reproduce issue.md --llm ollama:qwen2.5-coder:7b --out repro/"
    )]
    Reproduce(ReproduceArgs),
    /// Paper reproduction: grade a submission against a PaperBench rubric; a paper's lineage in
    /// a local corpus.
    #[command(subcommand)]
    Paper(PaperCommand),
}

#[derive(Debug, Subcommand)]
pub enum PaperCommand {
    /// Grade a submission against a PaperBench rubric from its leaves' scores, exactly as
    /// PaperBench aggregates (weighted means of siblings), optionally reduced to Code-Dev.
    #[command(
        long_about = "Grade a submission against a PaperBench rubric (a JSON tree of task nodes {id, \
requirements, weight, sub_tasks, task_category}). Leaves are scored, in this order, from --scores \
FILE ({leaf_id: 0, 1, null or {score, explanation}}, from any judge), from --verification FILE \
(leaves naming fingerprint criteria), and by the LLM judge (--llm: PaperBench's Expectations / \
Reality / Score over the submission's code). An inner node scores the weighted \
mean of its children; children weighing 0 in all give 0, as PaperBench. A leaf without a score is \
invalid: it counts 0 (PaperBench's rule) and the grade says how many there were and what the score \
is over the judged leaves only. --code-dev keeps only Code Development leaves (without any, the \
root is judged as one, as PaperBench does).",
        after_help = "Examples:\n  reprolab paper grade submission/ --rubric rubric.json --scores leaf-scores.json --code-dev\n  reprolab paper grade impl/ --rubric rubric.json --verification verdicts/verification.json --llm ollama:qwen2.5:7b"
    )]
    Grade(PaperGradeArgs),
    /// Check code against a paper's fingerprint, criterion by criterion: static checks of its
    /// constants and calls, execution probes in the sandbox, then (with --llm) a judge.
    #[command(
        long_about = "Check code against a paper's fingerprint (fingerprint.json: criteria with a fact, \
a scope, a category, the paper's source sentence and optional checks; format in \
benchmarks/papers/README.md). Criteria whose source sentence is not in the paper are dropped as \
ungrounded. Each criterion is decided by the strongest checker that applies: static (the code's \
constants and calls, read with Python's ast; nothing runs), execution (a probe script run in the \
sandbox with the code importable: an AssertionError fails the criterion), and only for what those \
leave undecided, the LLM judge (--llm). The table gives each criterion's verdict, the checker that \
decided it and the evidence (file:line, the assertion's message). Exit 0 when no criterion fails, \
1 when one does.",
        after_help = "Examples:\n  reprolab paper verify benchmarks/papers/label-smoothing/paper.md benchmarks/papers/label-smoothing/reference\n  reprolab paper verify paper.md my-impl/ --fingerprint fingerprint.json --out verdicts/"
    )]
    Verify(PaperVerifyArgs),
    /// Extract a paper's fingerprint with an LLM: the implementation details it states, each
    /// with its source sentence, then grounded, filtered and de-duplicated by rules.
    #[command(
        long_about = "Extract a paper's fingerprint (RePro): the model reads the paper section by section \
and lists the implementation details each states (data, preprocessing, hyperparameters, \
architecture, algorithm steps and formulas, evaluation, packages), each with the sentence it came \
from. Then rules decide: results and claims are dropped, a criterion whose sentence is not in the \
paper is dropped as ungrounded, the same fact twice is merged, and a criterion stating one \
constant gets a static value check from the names the model says code would use. Writes the \
fingerprint (format in benchmarks/papers/README.md) for `reprolab paper verify`; what was dropped \
and why goes to standard error (and into --json).",
        after_help = "Examples:\n  reprolab paper fingerprint paper.md --llm ollama:qwen2.5:7b\n  reprolab paper fingerprint benchmarks/papers/mixup/paper.md --llm openai:gpt-4o-mini --out /tmp/mixup.json"
    )]
    Fingerprint(PaperFingerprintArgs),
    /// Implement a paper with an LLM: plan the files, write them, then rounds of smoke run →
    /// verify → revise until no criterion fails.
    #[command(
        long_about = "Implement a paper with an LLM. The model plans a small PyTorch project \
(Paper2Code-style: files in dependency order and an entry script), writes the files one by one, \
then each round: a smoke run in the sandbox (`python ENTRY --smoke`: one short training; it must \
exit cleanly and print a finite `loss: <value>`), the verifier on every criterion of the \
fingerprint (static checks, probes, with --judge the LLM judge), and a revision: the failing \
criteria with their evidence and the smoke run's error go back to the model, which answers with \
a revision plan and SEARCH/REPLACE edits (a block that does not apply is reported back once). It \
stops when the smoke run passes and no criterion fails, or after --rounds. The fingerprint is \
--fingerprint, else fingerprint.json beside the paper, else extracted by the model (kept in \
OUT/fingerprint.json). Every round is kept in OUT/.rounds/N/ (code, smoke.json, \
verification.json, revision.md) and OUT/implementation.json is rewritten after each step: run \
the same command again to resume. Exit 0 when the last round passed.",
        after_help = "Examples:\n  reprolab paper implement benchmarks/papers/mixup/paper.md --llm ollama:qwen2.5-coder:7b --out mixup-impl\n  reprolab paper implement paper.md --fingerprint fp.json --rounds 6 --judge --llm openai:gpt-4o-mini --out impl/"
    )]
    Implement(PaperImplementArgs),
    /// The references of a paper resolved in a local corpus of papers (and their code), ranked
    /// by relevance to the paper's method. Offline unless --online (arXiv, GitHub).
    #[command(
        long_about = "The references of PAPER (Markdown, text, or a PDF with a text layer) resolved \
in a local corpus of papers, ranked by how relevant each is to the paper's method; the top ones' \
code is what an implementation should read first (AutoReproduce's lineage).\n\n\
The corpus (--corpus DIR) holds one paper per entry: a sub-directory with a paper.md, paper.txt \
or paper.pdf and, beside it, the paper's code if any (every .py, .ipynb, .sh, config ... file \
under the directory is listed), or a lone .md, .txt or .pdf file. Hidden entries and README files \
are not papers.\n\n\
The reference list is read from PAPER's References or Bibliography section (numbered, [n] or \
bulleted items; `Surname, I. and Surname, I. (2024). Title. Venue.` and similar formats). A \
reference names a corpus entry when the titles agree (lowercase, punctuation dropped, token \
Jaccard >= 0.8), when they are close (>= 0.5, or the subtitle left out) and an author surname is \
shared, or when the entry's whole title (4 words or more) appears in the reference. The entry \
that is PAPER itself is left out. The resolved entries are ranked by BM25 of their text against \
PAPER's Method or Approach section (the whole paper when it has none); the --top most relevant \
are listed first. References not in the corpus are listed too, those that name a tool (an \
optimizer, a dataset, a library) marked generic.\n\n\
Offline: only the corpus is searched, and the cache of earlier --online runs. With --online, \
the references the corpus lacks (or all, without --corpus) are looked up on arXiv and their code \
on GitHub, everything fetched kept in --lineage-cache (see docs/paper.md).",
        after_help = "Example:\n  reprolab paper lineage papers/blended-pairs/paper.md --corpus papers/ --top 5 --json"
    )]
    Lineage(PaperLineageArgs),
}

#[derive(Debug, Args)]
pub struct PaperImplementArgs {
    /// The paper (Markdown, text, or a PDF with a text layer).
    pub paper: PathBuf,
    /// Where the code goes (and the rounds, and the state to resume from).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// The fingerprint; default: fingerprint.json beside the paper, else extracted by the model.
    #[arg(long, value_name = "FILE")]
    pub fingerprint: Option<PathBuf>,
    /// Most verify → revise rounds (RePro: 4 worked best).
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub rounds: u32,
    /// Also ask the model to judge the criteria no check decides (one vote each).
    #[arg(long)]
    pub judge: bool,
    /// A corpus of papers and their code (see `reprolab paper lineage`): the code of the
    /// references it resolves goes into the prompts.
    #[arg(long, value_name = "DIR")]
    pub lineage: Option<PathBuf>,
    /// How many resolved references' code to show (AutoReproduce: 5).
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub lineage_top: usize,
    #[command(flatten)]
    pub online: crate::commands::paper::OnlineArgs,
    /// Most tokens of one answer.
    #[arg(long, default_value_t = 4096, value_name = "N")]
    pub max_tokens: u32,
    /// Time limit of one probe.
    #[arg(long, default_value_t = 120.0, value_name = "SECONDS")]
    pub timeout: f64,
    /// Time limit of the smoke run.
    #[arg(long, default_value_t = 300.0, value_name = "SECONDS")]
    pub smoke_timeout: f64,
    /// Run in fresh Python processes instead of forked children of a warm worker.
    #[arg(long)]
    pub cold: bool,
    #[command(flatten)]
    pub llm: crate::llm::LlmArgs,
}

#[derive(Debug, Args)]
pub struct PaperFingerprintArgs {
    /// The paper (Markdown, text, or a PDF with a text layer).
    pub paper: PathBuf,
    /// Where to write the fingerprint (an existing file is replaced only with --force).
    #[arg(long, default_value = "fingerprint.json", value_name = "FILE")]
    pub out: PathBuf,
    /// Replace --out if it exists.
    #[arg(long)]
    pub force: bool,
    /// Most tokens of one answer.
    #[arg(long, default_value_t = 2048, value_name = "N")]
    pub max_tokens: u32,
    #[command(flatten)]
    pub llm: crate::llm::LlmArgs,
}

#[derive(Debug, Args)]
pub struct PaperVerifyArgs {
    /// The paper (Markdown, text, or a PDF with a text layer).
    pub paper: PathBuf,
    /// The code to check (a directory).
    pub code: PathBuf,
    /// The fingerprint; default: fingerprint.json beside the paper.
    #[arg(long, value_name = "FILE")]
    pub fingerprint: Option<PathBuf>,
    /// Write verification.json into DIR.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub check: PaperCheckArgs,
}

/// How criteria are checked: probes in the sandbox, then the judge (shared by `paper verify` and
/// `bench paper`).
#[derive(Debug, Args)]
pub struct PaperCheckArgs {
    /// Time limit of one probe.
    #[arg(long, default_value_t = 120.0, value_name = "SECONDS")]
    pub timeout: f64,
    /// Run every probe in a fresh Python process instead of a forked child of a warm worker.
    #[arg(long)]
    pub cold: bool,
    /// Judge votes per criterion no check decides (majority; a tie leaves it undecided).
    #[arg(long, default_value_t = 3, value_name = "K")]
    pub votes: u32,
    /// With --llm the judge first writes a probe for a criterion no check decides (running it
    /// decides); this skips that: judge votes only.
    #[arg(long)]
    pub judge_only: bool,
    /// The judge, for criteria no static check or probe decides; without it they stay
    /// undecided.
    #[command(flatten)]
    pub llm: crate::llm::LlmArgs,
}

#[derive(Debug, Args)]
pub struct PaperGradeArgs {
    /// The submission's directory (its code is what the judge reads).
    pub submission: PathBuf,
    /// The PaperBench rubric (JSON).
    #[arg(long, value_name = "FILE")]
    pub rubric: PathBuf,
    /// Leaf scores: {leaf_id: 0, 1, null or {"score": .., "explanation": ..}}.
    #[arg(long, value_name = "FILE")]
    pub scores: Option<PathBuf>,
    /// verification.json of `reprolab paper verify --out`: leaves that name criteria
    /// ("criteria": [ids]) score 1 when all pass, 0 when one fails.
    #[arg(long, value_name = "FILE")]
    pub verification: Option<PathBuf>,
    /// Grade only the Code Development leaves (PaperBench Code-Dev).
    #[arg(long)]
    pub code_dev: bool,
    /// Judge votes per leaf that --scores and --verification leave unscored.
    #[arg(long, default_value_t = 1, value_name = "K")]
    pub votes: u32,
    /// The judge of the leaves left unscored; without it they are invalid (count 0, shown).
    #[command(flatten)]
    pub llm: crate::llm::LlmArgs,
}

#[derive(Debug, Args)]
pub struct PaperLineageArgs {
    /// The paper: .md, .markdown, .txt or .pdf (with a text layer).
    pub paper: PathBuf,
    /// The local corpus: a directory of papers (sub-directories with paper.md/.txt/.pdf and
    /// their code, or lone paper files). Needed unless --online.
    #[arg(long, value_name = "DIR", required_unless_present = "online")]
    pub corpus: Option<PathBuf>,
    /// How many of the most relevant resolved references to list first.
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub top: usize,
    #[command(flatten)]
    pub online: crate::commands::paper::OnlineArgs,
}

/// How reproduction scripts are run (shared by `reproduce` and `reproduce verify`).
#[derive(Debug, Clone, Args)]
pub struct ReproduceRunOptions {
    /// Run with this package version (repeatable; NAME==VERSION). Overrides the version the
    /// report states for that package; others come from the report, else the managed
    /// environment.
    #[arg(long = "package", value_name = "NAME==VER")]
    pub packages: Vec<String>,
    /// The project's source, importable by the script (`--repo DIR` is put on sys.path).
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// Take the frameworks the report uses without stating their versions (torch, keras,
    /// tensorflow, and numpy with them) as they were released by this day (YYYY-MM-DD).
    /// Default: the report's own date (a `created_at`/`date` field, a `Date:` line), else the
    /// date of the commit it names in --repo's git history; with none, the managed
    /// environment's versions.
    #[arg(long, value_name = "YYYY-MM-DD")]
    pub as_of: Option<String>,
    /// Runs per script, each with its own seed (RepGen's protocol: 5); the symptom must show in
    /// a majority.
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub runs: usize,
    /// Time limit of one run.
    #[arg(long, default_value_t = 120.0, value_name = "SECONDS")]
    pub timeout: f64,
    /// Memory limit of one run's processes.
    #[arg(long, default_value_t = 4096, value_name = "MB")]
    pub memory_mb: u64,
    /// Most candidate scripts judged while minimising a reproduction (each run with every seed).
    #[arg(long, default_value_t = 40, value_name = "N")]
    pub minimize_budget: usize,
    /// Run every script in a fresh Python process (import torch each time) instead of a forked
    /// child of a warm worker; the observations are the same.
    #[arg(long)]
    pub cold: bool,
}

impl ReproduceRunOptions {
    /// The reproduce crate's settings (checked there).
    pub fn options(&self) -> reprolab_reproduce::Options {
        reprolab_reproduce::Options {
            packages: self.packages.clone(),
            repo: self.repo.clone(),
            as_of: self.as_of.clone(),
            runs: self.runs,
            timeout_s: self.timeout,
            memory_mb: self.memory_mb,
        }
    }

    /// The minimisation budget, when minimising.
    pub fn minimize(&self, wanted: bool) -> Option<usize> {
        wanted.then_some(self.minimize_budget)
    }
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct ReproduceArgs {
    #[command(subcommand)]
    pub command: Option<ReproduceCommand>,
    /// The bug report (file or directory; see above).
    #[arg(required = true, value_name = "REPORT")]
    pub report: Option<PathBuf>,
    #[command(flatten)]
    pub run: ReproduceRunOptions,
    /// Where to write reproduce.py, requirements.txt, observed.txt and verdict.json (default:
    /// reproductions/<report name>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub agent: ReproduceAgentArgs,
    /// Keep the reproducing script as the model wrote it (by default statements are deleted
    /// while the verdict holds; the full script is kept as reproduce.full.py).
    #[arg(long)]
    pub no_minimize: bool,
    #[command(flatten)]
    pub llm: crate::llm::LlmArgs,
}

#[derive(Debug, Subcommand)]
pub enum ReproduceCommand {
    /// Judge an existing script against a report, no LLM: run it the way the reproducer does and
    /// say whether it shows the reported symptom, with the evidence.
    #[command(
        long_about = "Run SCRIPT --runs times (seeds 1..N) in the sandbox with the report's library \
versions and judge whether it shows the report's symptom (docs/reproduce.md). This is how any \
tool's scripts (a developer's, RepGen's, an LLM's) are judged on equal terms. Exits 0 when the \
script reproduces the bug, 1 when it does not, 2 on bad input. Runs are cached in the store: a \
second verify of the same script runs nothing.",
        after_help = "Examples:\n  reprolab reproduce verify benchmarks/bugs/01-bce-target-size benchmarks/bugs/01-bce-target-size/reference.py\n  reprolab reproduce verify issue.json repro.py --runs 3 --json"
    )]
    Verify(ReproduceVerifyArgs),
}

#[derive(Debug, Args)]
pub struct ReproduceVerifyArgs {
    /// The bug report (file or directory).
    #[arg(value_name = "REPORT")]
    pub report: PathBuf,
    /// The script to judge.
    #[arg(value_name = "SCRIPT")]
    pub script: PathBuf,
    #[command(flatten)]
    pub run: ReproduceRunOptions,
    /// Also write reproduce.py, requirements.txt, observed.txt and verdict.json into DIR.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// When the script reproduces the bug, also find the shortest version that still does
    /// (written as DIR/reproduce.py with --out, the given script as reproduce.full.py).
    #[arg(long)]
    pub minimize: bool,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// The directory holding the training script; it becomes the subject.
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// The function reprolab calls, FILE.py:FUNCTION (relative to DIR), or FILE.py, a
    /// script to run as it is (argparse options or top-level constants). Default: the one
    /// top-level function taking (config, seed) in DIR's .py files, else the one script
    /// declaring argparse options, else the one setting upper-case top-level constants.
    #[arg(long, value_name = "FILE.py[:FUNCTION]")]
    pub entry: Option<String>,
    /// Overwrite reprolab.toml, config.json, README.md (and reprolab_entry.py) when they exist.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct EvalArgs {
    /// Subject directory (or its reprolab.toml).
    pub subject: PathBuf,
    /// How many trainings (seeds seed..seed+runs).
    #[arg(long, short = 'n', default_value_t = 10)]
    pub runs: usize,
    /// Config file (JSON) to evaluate instead of the subject's own.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// First seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

#[derive(Debug, Clone, Copy, ValueEnum, Default)]
pub enum SplitArg {
    Search,
    #[default]
    Holdout,
}

impl SplitArg {
    pub fn split(self) -> reprolab_core::Split {
        match self {
            SplitArg::Search => reprolab_core::Split::Search,
            SplitArg::Holdout => reprolab_core::Split::Holdout,
        }
    }
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Subject directory (or its reprolab.toml).
    pub subject: PathBuf,
    /// Config A (JSON). Default: the subject's own config.
    #[arg(long, value_name = "FILE")]
    pub a: Option<PathBuf>,
    /// Config B (JSON).
    #[arg(long, value_name = "FILE")]
    pub b: PathBuf,
    /// Trainings per config (the same seeds for both).
    #[arg(long, short = 'n', default_value_t = 10)]
    pub runs: usize,
    /// First seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Which split the verdict is judged on.
    #[arg(long, value_enum, default_value_t = SplitArg::Holdout)]
    pub split: SplitArg,
    /// Also test whether B is equivalent to A within ±M in the metric's units (TOST: two
    /// one-sided Wilcoxon tests on the paired runs, both significant at 5%). "No significant
    /// difference" alone does not show equivalence.
    #[arg(long, value_name = "M")]
    pub margin: Option<f64>,
}

#[derive(Debug, Args)]
pub struct TraceArgs {
    /// Subject directory (or its reprolab.toml).
    pub subject: PathBuf,
    /// Config file (JSON) instead of the subject's own.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Where to save the trace. Default: .reprolab/traces/<subject>-seed<N>.json
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct EnvArgs {
    /// Print only the interpreter's path (after provisioning), for scripts.
    #[arg(long)]
    pub python_path: bool,
    /// Install Ray into the managed environment (what --backend ray does on first use) and
    /// print the path of its `ray` command, to start cluster nodes with the same packages:
    /// `$(reprolab env --ray) start --head`.
    #[arg(long, conflicts_with = "python_path")]
    pub ray: bool,
    /// Install tensorflow-cpu into the managed environment (what the first training of a Keras
    /// subject with backend = "tensorflow" does) and print the interpreter's path.
    #[arg(long, conflicts_with_all = ["python_path", "ray"])]
    pub tensorflow: bool,
}

#[derive(Debug, Args)]
pub struct BenchExecArgs {
    /// Subject to train.
    #[arg(default_value = "subjects/digits-mlp")]
    pub subject: PathBuf,
    /// Trainings per method.
    #[arg(long, short = 'n', default_value_t = 12)]
    pub runs: usize,
}

#[derive(Debug, Args)]
pub struct BenchReproduceExecArgs {
    /// Reproduction scripts to run (default: three reference scripts of benchmarks/bugs that need
    /// only the managed environment).
    pub scripts: Vec<PathBuf>,
    /// Runs (seeds) per script and method.
    #[arg(long, short = 'n', default_value_t = 10)]
    pub runs: usize,
}

#[derive(Debug, Clone, Copy, ValueEnum, Default)]
pub enum KillTestArg {
    /// DeepCrime's GLM (metric ~ mutant), Wald test.
    #[default]
    Glm,
    /// Wilcoxon signed-rank, paired by seed.
    Wilcoxon,
}

#[derive(Debug, Args)]
pub struct MutateArgs {
    /// A correct subject directory (or its reprolab.toml).
    pub subject: PathBuf,
    /// Where to write the kept mutants, one faulty subject directory each.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Mutation operators, comma separated (HBS,HLR,HNE,HDB,ACH,ARM,AAL,RAW,WCI,BCI,LCH,OCH,LRM,LAD,LCN,LCF,CPP) or "all".
    #[arg(long, default_value = "all")]
    pub operators: String,
    /// Trainings of the original and of each mutant (the same seeds).
    #[arg(long, short = 'n', default_value_t = 20)]
    pub runs: usize,
    /// Statistical test of the killing criterion.
    #[arg(long, value_enum, default_value_t = KillTestArg::Glm)]
    pub test: KillTestArg,
    /// Binary-search refinements for HLR and HNE.
    #[arg(long, default_value_t = 3)]
    pub search_steps: usize,
    /// Classification: drop smaller worse than this (metric points) is too hard to keep.
    #[arg(long, default_value_t = 0.10)]
    pub min_drop: f64,
    /// Classification: a larger drop is too easy to keep.
    #[arg(long, default_value_t = 0.80)]
    pub max_drop: f64,
    /// Regression: keep mutants whose loss is at least this many times the original's...
    #[arg(long, default_value_t = 1.5)]
    pub min_loss_ratio: f64,
    /// ...and at most this many times.
    #[arg(long, default_value_t = 5.0)]
    pub max_loss_ratio: f64,
}

#[derive(Debug, Args)]
pub struct FaultsArgs {
    /// A fault benchmark: a directory of faulty subjects (each with [fix] in its manifest).
    #[arg(default_value = "benchmarks/faults")]
    pub dir: PathBuf,
    /// Train every fault's faulty and fixed configs N times (cached) and record the figures in
    /// its fault.json.
    #[arg(long, value_name = "N")]
    pub measure: Option<usize>,
    /// The split measurements are taken on.
    #[arg(long, value_enum, default_value_t = SplitArg::Search)]
    pub split: SplitArg,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineArg {
    /// Uniform random search over the space (the study's baseline).
    Random,
    /// Bayesian optimisation with a Tree-structured Parzen Estimator (HEBO's role in the study).
    Tpe,
    /// Hyperband with a TPE sampler, epochs as the fidelity: weak candidates stop early. It
    /// starts from localisation's suggestions and changes suspected hyperparameters more often;
    /// the last fifth of the budget re-trains its best few configs and keeps the best mean.
    Bohb,
    /// AutoTrainer-style: trace, detect symptoms, try its fixes in order, each retrained from scratch.
    Rules,
    /// Fault-localisation-guided: TPE over only the hyperparameters localisation suspects; the
    /// second half adds the next suspects after an improvement, the whole space without one.
    Guided,
    /// The study's LLM repair prompt (needs --llm): --samples answers, each read into a patch
    /// the search space accepts and trained.
    Llm,
    /// LLM generate-validate-refine (needs --llm): the localisation result, the allowed values
    /// and the measured outcome of every attempt go back to the model for --rounds rounds.
    #[value(name = "llm-refine")]
    #[serde(rename = "llm-refine")]
    LlmRefine,
}

/// In-training pruning of a search's trials (random, tpe, bohb).
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PruneArg {
    /// Every trial trains to its end.
    None,
    /// The median pruner: after 5 finished trials, a trial stops at the first epoch where its
    /// best validation metric so far is worse than the median of the finished trials' at that
    /// epoch, but never in the first third of its epochs nor at its last (Optuna's
    /// MedianPruner with a warm-up of a third of the trial's epochs).
    Median,
    /// Optuna's MedianPruner with its defaults (no warm-up): the pruner measured in
    /// docs/results/bench-repair-pruning, kept for comparison.
    #[value(name = "optuna-median")]
    #[serde(rename = "optuna-median")]
    OptunaMedian,
    /// Optuna's PercentilePruner(75) with median's warm-up: as median, but a trial stops only
    /// when it is behind three quarters of the finished trials (in their bottom quarter).
    #[value(name = "p75")]
    P75,
}

impl PruneArg {
    pub fn pruner(self) -> Option<reprolab_search::PercentilePruner> {
        let median = reprolab_search::PercentilePruner::median();
        match self {
            PruneArg::None => None,
            PruneArg::Median => Some(median),
            PruneArg::OptunaMedian => Some(reprolab_search::PercentilePruner::optuna_median()),
            PruneArg::P75 => Some(reprolab_search::PercentilePruner {
                percentile: 75.0,
                ..median
            }),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            PruneArg::None => "none",
            PruneArg::Median => "median",
            PruneArg::OptunaMedian => "optuna-median",
            PruneArg::P75 => "p75",
        }
    }
}

/// How the LLM engines ask (repair and bench repair).
#[derive(Debug, Clone, Args)]
pub struct LlmRepairArgs {
    /// LLM engines: answers per prompt (the request's n).
    #[arg(long, default_value_t = 5)]
    pub samples: u32,
    /// LLM engines: sampling temperature.
    #[arg(long, default_value_t = 0.5)]
    pub temperature: f64,
    /// llm-refine: rounds of generate-validate-refine.
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
}

impl LlmRepairArgs {
    pub fn options(&self) -> reprolab_repair::llm::LlmRepairOptions {
        reprolab_repair::llm::LlmRepairOptions {
            samples: self.samples,
            temperature: self.temperature,
            rounds: self.rounds,
            ..Default::default()
        }
    }
}

#[derive(Debug, Args)]
pub struct RepairArgs {
    /// A faulty subject directory (or its reprolab.toml).
    pub subject: PathBuf,
    #[arg(long, value_enum, default_value_t = EngineArg::Bohb)]
    pub engine: EngineArg,
    /// Search budget: a multiple ("20x") of the larger of the faulty and the default (fixed)
    /// program's mean training time, so at least 20 trainings of the default program; counted
    /// as the sum of trial training times, passed by less than one trial.
    #[arg(long, default_value = "20x", conflicts_with = "trials")]
    pub budget: String,
    /// Search budget as a number of trials (the faulty config is trial 0).
    #[arg(long)]
    pub trials: Option<usize>,
    /// Seed of the search (its randomness and its trainings).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Validation retrainings of faulty, patch (and ground truth) on the holdout split.
    #[arg(long, short = 'n', default_value_t = 10)]
    pub runs: usize,
    /// Reduce the patch to a 1-minimal set of changes that keeps a significant improvement.
    #[arg(long)]
    pub minimize: bool,
    /// Stop the search when a trial reaches this metric (the study: 0.99 accuracy).
    #[arg(long)]
    pub stop_at: Option<f64>,
    /// In-training pruning of the search's trials (random, tpe, bohb; other engines ignore
    /// it): a pruned trial is recorded as such and is never the patch.
    #[arg(long, value_enum, default_value_t = PruneArg::None)]
    pub prune: PruneArg,
    /// Where to write the patched config. Default: .reprolab/patches/<subject>-<engine>.json
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub llm_repair: LlmRepairArgs,
    #[command(flatten)]
    pub llm: crate::llm::LlmArgs,
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Run repair engines over a fault benchmark; write the study's Table 9 and Figure 3.
    #[command(
        after_help = "Example:\n  reprolab bench repair benchmarks/faults --engines random,bohb --budgets 10x,20x --repeats 3 --out bench-repair"
    )]
    Repair(BenchRepairArgs),
    /// Score localisation engines against a fault benchmark's ground truth: RC, PR, F3.
    #[command(
        after_help = "Example:\n  reprolab bench localize benchmarks/faults --engines static,all --repeats 5"
    )]
    Localize(BenchLocalizeArgs),
    /// Bug reproduction over a directory of reports: with --verify-only, check each bug's
    /// reference and near-miss; with --llm, the reproduction rate of a model.
    #[command(
        long_about = "Run bug reproduction over a benchmark: a directory of bug directories (report.md + \
bug.json, as benchmarks/bugs; or RepGen's NNN/bug_report layout) or a JSON-lines file of reports. \
--verify-only needs no model: each bug's reference.py must be confirmed and its near_miss.py \
rejected by `reproduce verify`, and the symptom class read from the report is compared with \
bug.json. With --llm the generate-run-refine loop runs per bug: reproduction rate by symptom, \
framework and root cause; attempts, calls, tokens, cost and time per bug. Rows are appended to \
OUT/results.jsonl as each bug finishes, so a killed run resumes; OUT/report.md and report.html \
are rewritten at the end. Every script run is cached in the store.",
        after_help = "Examples:\n  reprolab bench reproduce benchmarks/bugs --verify-only --out bench-bugs-verify\n  reprolab bench reproduce benchmarks/bugs --llm local:smollm2 --attempts 2 --out bench-bugs-smollm2"
    )]
    Reproduce(BenchReproduceArgs),
    /// Paper reproduction on the bundled papers: the verifier on reference and mutated
    /// implementations (violations caught, false alarms, per checker), rubric grades, and with
    /// --llm the judge and the recall of extracted fingerprints.
    #[command(
        long_about = "Paper reproduction on the bundled papers (benchmarks/papers: paper, gold fingerprint, \
rubric, reference implementation, mutated implementation with known violations). Without a model, \
each gold fingerprint is verified against both implementations by static checks and execution \
probes: every violation a check can see must be caught, and no criterion may fail where there is \
no violation (a false alarm). Rubrics are graded from the verifications. With --llm, the judge \
decides what no check does, the model's own fingerprint of each paper is scored for recall \
against the gold criteria, and the model implements each paper from its gold fingerprint \
(`paper implement`, the other bundled papers as lineage corpus; OUT/<paper>/impl): rounds, \
whether it passed, the rubric graded from its last verification, calls, tokens and cost. Rows are appended to OUT/results.jsonl as each paper finishes (a killed \
run resumes); OUT/report.md and report.html are rewritten at the end; every probe run is cached \
in the store. Exit 0 when every machine-detectable violation is caught without a false alarm.",
        after_help = "Examples:\n  reprolab bench paper --out bench-paper\n  reprolab bench paper --only mixup,focal-loss --llm ollama:qwen2.5:7b --out bench-paper-qwen"
    )]
    Paper(BenchPaperArgs),
}

#[derive(Debug, Args)]
pub struct BenchPaperArgs {
    /// Directory of paper directories.
    #[arg(default_value = "benchmarks/papers")]
    pub benchmark: PathBuf,
    /// Output directory (results.jsonl, report.md, report.html, verifications per paper).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Only these papers (comma-separated names).
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub only: Vec<String>,
    /// With --llm: rounds of `paper implement` per paper.
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub rounds: u32,
    /// Probes, and the judge, fingerprint extractor and implementer (--llm); without a model,
    /// checks only.
    #[command(flatten)]
    pub check: PaperCheckArgs,
}

#[derive(Debug, Args)]
pub struct BenchReproduceArgs {
    /// Directory of bug directories, or a JSON-lines file of reports.
    #[arg(default_value = "benchmarks/bugs")]
    pub benchmark: PathBuf,
    /// Judge each bug's reference.py and near_miss.py; no model.
    #[arg(long)]
    pub verify_only: bool,
    /// Output directory (results.jsonl, report.md, report.html, one folder per bug).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Only these bugs (comma-separated ids; a trailing * matches a prefix).
    #[arg(long, value_delimiter = ',', value_name = "IDS")]
    pub only: Vec<String>,
    #[command(flatten)]
    pub agent: ReproduceAgentArgs,
    #[command(flatten)]
    pub run: ReproduceRunOptions,
    #[command(flatten)]
    pub llm: crate::llm::LlmArgs,
}

/// How the model writes reproductions (`reproduce REPORT`, `bench reproduce --llm`).
#[derive(Debug, Args)]
pub struct ReproduceAgentArgs {
    /// Generate-run-refine attempts per bug before giving up.
    #[arg(long, default_value_t = 5, value_name = "K")]
    pub attempts: u32,
    /// Most tokens of one model answer (a script rarely needs more than 1,000; small local
    /// models that ramble are cut here).
    #[arg(long, default_value_t = 2048, value_name = "N")]
    pub max_tokens: u32,
    /// Code context: the K definitions of `--repo`/the report's code/a pinned non-framework
    /// package that rank highest against the report (BM25 over code-aware tokens, traceback
    /// functions first; training loops added for silent bugs) go into the prompt; 0: none.
    #[arg(long = "context", default_value_t = 5, value_name = "K")]
    pub context: usize,
    /// Skip the plan: by default the model first lists the reproduction's concrete steps
    /// (RepGen's plan), and every attempt's prompt carries them.
    #[arg(long)]
    pub no_plan: bool,
}

impl ReproduceAgentArgs {
    /// The loop's settings; `--attempts` checked.
    pub fn options(&self) -> anyhow::Result<reprolab_reproduce::agent::AgentOptions> {
        if self.attempts == 0 || self.attempts > 50 {
            anyhow::bail!("--attempts is {}; expected 1 to 50", self.attempts);
        }
        Ok(reprolab_reproduce::agent::AgentOptions {
            attempts: self.attempts,
            max_tokens: self.max_tokens,
            plan: !self.no_plan,
            ..Default::default()
        })
    }
}

#[derive(Debug, Args)]
pub struct BenchRepairArgs {
    /// Fault benchmark directory (faulty subjects with [fix]).
    #[arg(default_value = "benchmarks/faults")]
    pub benchmark: PathBuf,
    /// Engines to compare, comma separated.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = vec![EngineArg::Random, EngineArg::Tpe, EngineArg::Bohb, EngineArg::Rules, EngineArg::Guided])]
    pub engines: Vec<EngineArg>,
    /// Budgets, comma separated multiples of the larger of the faulty and the default (fixed)
    /// program's mean training time.
    #[arg(long, value_delimiter = ',', default_value = "10x,20x")]
    pub budgets: Vec<String>,
    /// Repetitions of every (fault, engine, budget) with different search seeds.
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
    /// In-training pruning, comma separated: each prunable engine (random, tpe, bohb) runs once
    /// per value, named `ENGINE+median` when pruned (`--prune none,median` compares them side
    /// by side); the other engines run unpruned.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = vec![PruneArg::None])]
    pub prune: Vec<PruneArg>,
    /// Only these arms of the engines × budgets × prune grid, comma separated, each
    /// `ENGINE@BUDGET` with the engine named as in the report (`random@20x,bohb+median@5x`):
    /// unequal arms side by side in one run, without the whole grid. Default: every arm.
    #[arg(long, value_delimiter = ',', value_name = "ENGINE@BUDGET")]
    pub arms: Vec<String>,
    /// Validation retrainings per config.
    #[arg(long, short = 'n', default_value_t = 10)]
    pub runs: usize,
    /// Also minimise every significant patch.
    #[arg(long)]
    pub minimize: bool,
    /// Only faults whose directory path contains one of these strings (comma separated, e.g.
    /// `real/D4,HLR-lr-10`).
    #[arg(long, value_delimiter = ',', value_name = "PARTS")]
    pub only: Vec<String>,
    /// Report directory (results.jsonl, report.md, report.html, figures/). Rerunning with the same
    /// directory resumes: finished cells are read back, not recomputed.
    #[arg(long, value_name = "DIR", default_value = "bench-repair")]
    pub out: PathBuf,
    /// Cells (fault × engine × budget × repeat) repaired at once. Each already trains its
    /// configs in parallel on every worker; on a Ray cluster with many more slots than a search
    /// round asks for, several cells in flight keep the slots busy.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub cells: usize,
    #[command(flatten)]
    pub llm_repair: LlmRepairArgs,
    #[command(flatten)]
    pub llm: crate::llm::LlmArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LocalizeEngine {
    /// Rules over the config and the search space; no training.
    Static,
    /// Monitors over one instrumented training (AutoTrainer / DeepDiagnosis signals).
    Dynamic,
    /// Both, merged, de-duplicated and ranked.
    All,
    /// The study's FL prompt to an LLM (needs --llm), asked --llm-repeats times; every reason
    /// mapped to fault types automatically, the answers aggregated by vote.
    Llm,
}

/// How the LLM localisation engine asks (localize and bench localize).
#[derive(Debug, Clone, Args)]
pub struct LlmLocalizeArgs {
    /// llm engine: answers to the FL prompt, aggregated by vote.
    #[arg(long, default_value_t = 5)]
    pub llm_repeats: u32,
    /// llm engine: sampling temperature (the study: 0).
    #[arg(long, default_value_t = 0.0)]
    pub llm_temperature: f64,
    /// llm engine: map reasons to fault types by keywords only (no second, structured call).
    #[arg(long)]
    pub keywords_only: bool,
}

impl LlmLocalizeArgs {
    pub fn options(&self) -> reprolab_localize::llm::LlmFlOptions {
        reprolab_localize::llm::LlmFlOptions {
            repeats: self.llm_repeats,
            temperature: self.llm_temperature,
            structured_mapping: !self.keywords_only,
            ..Default::default()
        }
    }
}

#[derive(Debug, Args)]
pub struct LocalizeArgs {
    /// Subject directory (or its reprolab.toml).
    pub subject: PathBuf,
    #[arg(long, value_enum, default_value_t = LocalizeEngine::All)]
    pub engine: LocalizeEngine,
    /// Config file (JSON) instead of the subject's own.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Seed of the traced training (dynamic, all).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[command(flatten)]
    pub llm_localize: LlmLocalizeArgs,
    #[command(flatten)]
    pub llm: crate::llm::LlmArgs,
}

#[derive(Debug, Args)]
pub struct BenchLocalizeArgs {
    /// Fault benchmark directory (faulty subjects with [fix]).
    #[arg(default_value = "benchmarks/faults")]
    pub benchmark: PathBuf,
    /// Engines to score, comma separated.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = vec![LocalizeEngine::Static, LocalizeEngine::Dynamic, LocalizeEngine::All])]
    pub engines: Vec<LocalizeEngine>,
    /// Runs of engines that train (distinct seeds); the answer is their mode, as in the study.
    #[arg(long, default_value_t = 5)]
    pub repeats: usize,
    /// Report directory (results.jsonl, report.md, report.html); rerunning resumes.
    #[arg(long, value_name = "DIR", default_value = "bench-localize")]
    pub out: PathBuf,
    /// Only faults whose directory path contains one of these strings (comma separated, e.g.
    /// `real/D4,HLR-lr-10`).
    #[arg(long, value_delimiter = ',', value_name = "PARTS")]
    pub only: Vec<String>,
    #[command(flatten)]
    pub llm_localize: LlmLocalizeArgs,
    #[command(flatten)]
    pub llm: crate::llm::LlmArgs,
}

#[derive(Debug, Subcommand)]
pub enum LlmCommand {
    /// Ask a model one question and print its answers (checks a provider, a key or a recording).
    #[command(
        after_help = "Examples:\n  reprolab llm chat \"Say hi\" --llm ollama:llama3.2\n  reprolab llm chat \"List 3 optimisers as JSON\" --llm openai:gpt-4o-mini --json-mode --n 2\n  reprolab llm chat \"Say hi\" --llm openai:gpt-4o-mini --llm-record cassettes\n  reprolab llm chat \"Say hi\" --llm replay:cassettes"
    )]
    Chat(Box<LlmChatArgs>),
    /// The most recent LLM calls recorded in the store: model, tokens, latency, cost, errors.
    #[command(after_help = "Example:\n  reprolab llm calls --limit 50")]
    Calls(LlmCallsArgs),
}

#[derive(Debug, Args)]
pub struct LlmChatArgs {
    /// The user message ("-" reads it from stdin).
    pub prompt: String,
    /// A system message sent before the prompt.
    #[arg(long, value_name = "TEXT")]
    pub system: Option<String>,
    /// How many answers to ask for.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub n: u32,
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f64,
    /// Most tokens per answer.
    #[arg(long, default_value_t = 1024)]
    pub max_tokens: u32,
    /// Sampling seed (servers that support one).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Ask for a JSON object (OpenAI response_format) and check that each answer parses.
    /// (--json, a global flag, prints this command's output as JSON.)
    #[arg(long)]
    pub json_mode: bool,
    #[command(flatten)]
    pub llm: crate::llm::LlmArgs,
}

#[derive(Debug, Args)]
pub struct LlmCallsArgs {
    /// How many of the most recent calls to show.
    #[arg(long, short = 'n', default_value_t = 20)]
    pub limit: usize,
}

#[derive(Debug, Args)]
pub struct NeutralityArgs {
    /// A faulty subject directory with a [fix] table (or its reprolab.toml).
    pub subject: PathBuf,
    /// Neutral neighbours of each node expanded, best mean first.
    #[arg(long, default_value_t = 5)]
    pub top_k: usize,
    /// Trainings per node (seeds 0..runs).
    #[arg(long, short = 'n', default_value_t = 10)]
    pub runs: usize,
    /// Wall-clock budget: "30m", "90s", "1h". Default: 30m, or none when --nodes is given.
    #[arg(long, value_name = "DURATION")]
    pub budget: Option<String>,
    /// Stop after N neighbours have been tried (the known fix not counted).
    #[arg(long, value_name = "N")]
    pub nodes: Option<usize>,
    /// The split every node's metric is read on.
    #[arg(long, value_enum, default_value_t = SplitArg::Holdout)]
    pub split: SplitArg,
    /// Train every neighbour --runs times (no early stopping of clearly worse ones).
    #[arg(long)]
    pub no_sequential: bool,
    /// Directory for graph.json, graph.dot, graph.svg and summary.json.
    /// Default: .reprolab/neutrality/<subject>
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Write alternatives.json into --out instead of the subject's directory.
    #[arg(long)]
    pub no_store: bool,
}

#[derive(Debug, Subcommand)]
pub enum CodegenCommand {
    /// Run every task's reference solution (and with --wrong its wrong solutions) and flag broken
    /// tasks with the reason.
    #[command(
        long_about = "Run every task's reference solution through the harness and flag the tasks whose \
reference does not pass (with the exception type and message), whose test has fewer than 3 tests, \
or (with --wrong) whose tests a known-wrong solution passes (weak tests). Exits 0 when every task \
is valid, 1 otherwise.",
        after_help = "-j, --workers N: parallel samples (default: the number of cores).\n\nExamples:\n  reprolab codegen validate benchmarks/codegen/tasks.jsonl\n  reprolab codegen validate my-tasks.jsonl --wrong --only pre/normalize_images"
    )]
    Validate(CodegenValidateArgs),
    /// Evaluate answers (a generations file, or a model) on a task file; write results and reports.
    #[command(
        long_about = "Evaluate model answers on a task file. For each answer the code is extracted (the \
largest ```python block that parses, then any fenced block, then the raw text; otherwise no_code), \
put into a fresh directory (function tasks: solution.py + test_task.py; repository tasks: a copy of \
the repository with the definition replaced), and tested with pytest in the sandbox: scrubbed \
environment, no network, a time limit scaled from the reference solution's run time, bounds on \
memory, output and processes, the whole process group killed at the end. Every test's outcome is \
recorded with exception type, message and traceback; failures are labelled with Deep-Bench's \
taxonomy by rules, and with --classify-llm SPEC each rule label is shown to that model with the \
prompt and the code and replaced by its answer when the answer is a valid label (both labels are \
kept). Writes DIR/results.jsonl, DIR/summary.json, DIR/report.md and DIR/report.html. Results and \
classifier answers are stored per sample: rerunning (or resuming an interrupted run) only runs and \
asks what is missing.",
        after_help = "-j, --workers N: parallel samples (default: the number of cores).\n\nExamples:\n  reprolab codegen run benchmarks/codegen/tasks.jsonl --generations answers.jsonl --out runs/gpt\n  reprolab codegen run tasks.jsonl --generations answers.jsonl --samples 10 -j 4 --out runs/x --only 'train/*'\n  reprolab codegen run tasks.jsonl --llm openai:gpt-4o --samples 10 --temperature 0.8 --out runs/gpt4o\n  reprolab codegen run tasks.jsonl --generations answers.jsonl --classify-llm openai:gpt-4o-mini --out runs/gpt"
    )]
    Run(CodegenRunArgs),
    /// Re-render the report of a run directory from its stored results.
    #[command(after_help = "Example:\n  reprolab codegen report runs/gpt")]
    Report(CodegenReportArgs),
    /// Measure the harness: overhead per sample and samples/min of the warm runners against one
    /// fresh pytest process per sample, in the same run.
    #[command(
        after_help = "-j, --workers N: parallel samples (default: the number of cores).\n\nExamples:\n  reprolab codegen bench benchmarks/codegen/tasks.jsonl --repeat 2\n  reprolab codegen bench tasks.jsonl --generations answers.jsonl -j 2"
    )]
    Bench(CodegenBenchArgs),
}

/// Sandbox limits and runner choice shared by the codegen commands.
#[derive(Debug, Args, Clone)]
pub struct CodegenLimits {
    /// Bound on the memory a sample's processes add, in MiB (watchdog on private memory, plus a
    /// soft allocation cap in the warm runner).
    #[arg(long, default_value_t = 2048, value_name = "MB")]
    pub memory_mb: u64,
    /// Bound on what a sample prints, in MiB.
    #[arg(long, default_value_t = 4, value_name = "MB")]
    pub output_mb: u64,
    /// Processes or threads a sample may start (0: no bound).
    #[arg(long, default_value_t = 512, value_name = "N")]
    pub max_procs: u32,
    /// A sample's time limit is FACTOR x the reference's run time + --timeout-slack, at least
    /// --timeout-min and at most the task's timeout_s.
    #[arg(long, default_value_t = 4.0, value_name = "FACTOR")]
    pub timeout_factor: f64,
    #[arg(long, default_value_t = 2.0, value_name = "SECONDS")]
    pub timeout_slack: f64,
    #[arg(long, default_value_t = 5.0, value_name = "SECONDS")]
    pub timeout_min: f64,
    /// Only these tasks (comma-separated ids; a trailing * matches a prefix).
    #[arg(long, value_delimiter = ',', value_name = "IDS")]
    pub only: Vec<String>,
}

#[derive(Debug, Args)]
pub struct CodegenValidateArgs {
    /// Task file (JSON lines; see docs/codegen.md).
    pub tasks: PathBuf,
    /// Also run each task's "wrong" solutions and flag tests that one of them passes.
    #[arg(long)]
    pub wrong: bool,
    /// One fresh `python -m pytest` process per sample instead of the warm runners.
    #[arg(long)]
    pub fresh: bool,
    #[command(flatten)]
    pub limits: CodegenLimits,
}

#[derive(Debug, Args)]
pub struct CodegenRunArgs {
    /// Task file (JSON lines; see docs/codegen.md).
    pub tasks: PathBuf,
    /// Answers to evaluate: JSON lines {"task_id", "sample", "completion"} from any system.
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "llm",
        conflicts_with = "llm"
    )]
    pub generations: Option<PathBuf>,
    /// Generate the answers with the model of --llm SPEC (see docs/llm.md).
    #[command(flatten)]
    pub llm: crate::llm::LlmArgs,
    /// Samples per task (default with --generations: all in the file; with --llm: 1).
    #[arg(long, short = 'n', value_name = "N")]
    pub samples: Option<u32>,
    /// Sampling temperature for --llm.
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f64,
    /// Refine the rules' taxonomy label of every failed sample with this model (a SPEC as for
    /// --llm; the other --llm-* flags apply to it too). results.jsonl keeps both labels; a model
    /// error or an answer without a valid label leaves the rules' label. Answers are stored, so
    /// rerunning a finished run with this flag asks the model without running any test again.
    #[arg(long, value_name = "SPEC")]
    pub classify_llm: Option<String>,
    /// Run directory for results and reports.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// One fresh `python -m pytest` process per sample instead of the warm runners.
    #[arg(long)]
    pub fresh: bool,
    #[command(flatten)]
    pub limits: CodegenLimits,
}

#[derive(Debug, Args)]
pub struct CodegenReportArgs {
    /// The --out directory of a `codegen run`.
    pub dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct CodegenBenchArgs {
    /// Task file.
    pub tasks: PathBuf,
    /// Answers to run (default: every task's reference solution, --repeat times).
    #[arg(long, value_name = "FILE")]
    pub generations: Option<PathBuf>,
    /// Copies of each reference solution when no --generations is given.
    #[arg(long, default_value_t = 2)]
    pub repeat: u32,
    #[command(flatten)]
    pub limits: CodegenLimits,
}
