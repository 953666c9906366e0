//! The deployment bundle of an exported job: the `.sql` file for `sql-client.sh -f`, manifests
//! for the Flink Kubernetes Operator (`FlinkDeployment` and `FlinkSessionJob`, the SQL in a
//! ConfigMap), a Dockerfile for the image they run, the list of jars, and the export report.
//!
//! The operator runs SQL through a small runner program (a jar whose main method executes a SQL
//! script, such as the operator's `flink-sql-runner-example`); the Dockerfile copies it and the
//! connector jars into the Flink image.

use std::fmt::Write as _;

use riffle_dialects::mappings;

use super::ExportedJob;

/// How to name and run the deployment.
#[derive(Debug, Clone)]
pub struct BundleOptions {
    /// Kubernetes name of the deployment (lower-case letters, digits and `-`).
    pub name: String,
    /// The container image; by default `<name>:latest`, built from the bundle's Dockerfile.
    pub image: Option<String>,
    /// The session cluster (`FlinkDeployment` name) the `FlinkSessionJob` runs on.
    pub session_cluster: String,
    /// Job parallelism.
    pub parallelism: u32,
    /// Where the SQL runner jar is in the image.
    pub runner_jar: String,
}

impl BundleOptions {
    /// Defaults for a job file stem: its name made Kubernetes-safe, a `flink-session` cluster,
    /// parallelism 1.
    pub fn for_job(stem: &str) -> BundleOptions {
        let mut name: String = stem
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect();
        name = name.trim_matches('-').to_string();
        if name.is_empty() {
            name = "riffle-job".to_string();
        }
        BundleOptions {
            name,
            image: None,
            session_cluster: "flink-session".to_string(),
            parallelism: 1,
            runner_jar: "local:///opt/flink/usrlib/sql-runner.jar".to_string(),
        }
    }
}

/// One file of the bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleFile {
    /// File name (no directories).
    pub name: String,
    /// Its contents.
    pub contents: String,
}

/// A YAML scalar: JSON strings are valid YAML.
fn yaml(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// The files of the bundle for `job`, whose SQL file is called `<stem>.sql`.
pub fn bundle(job: &ExportedJob, stem: &str, options: &BundleOptions) -> Vec<BundleFile> {
    let sql_name = format!("{stem}.sql");
    let image = options
        .image
        .clone()
        .unwrap_or_else(|| format!("{}:latest", options.name));
    let operator_version = mappings()
        .flink
        .release(job.flink_version)
        .map(|r| r.operator.clone())
        .unwrap_or_default();
    let script_dir = "/opt/flink/usrlib/sql-scripts";
    let script = format!("{script_dir}/{sql_name}");
    let configmap = format!("{}-sql", options.name);

    let mut config_map = String::new();
    let _ = writeln!(
        config_map,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {}",
        yaml(&configmap)
    );
    let _ = writeln!(config_map, "data:\n  {}: |-", yaml(&sql_name));
    for line in job.changes.output.lines() {
        let _ = writeln!(config_map, "    {line}");
    }

    let volume = format!(
        "  podTemplate:\n    spec:\n      containers:\n        - name: flink-main-container\n          volumeMounts:\n            - name: sql-scripts\n              mountPath: {}\n      volumes:\n        - name: sql-scripts\n          configMap:\n            name: {}\n",
        yaml(script_dir),
        yaml(&configmap)
    );
    let job_spec = format!(
        "  job:\n    jarURI: {}\n    args: [{}]\n    parallelism: {}\n    upgradeMode: stateless\n",
        yaml(&options.runner_jar),
        yaml(&script),
        options.parallelism
    );
    let deployment = format!(
        "{config_map}---\napiVersion: flink.apache.org/v1beta1\nkind: FlinkDeployment\nmetadata:\n  name: {}\nspec:\n  image: {}\n  flinkVersion: {}\n  serviceAccount: flink\n  flinkConfiguration:\n    taskmanager.numberOfTaskSlots: \"{}\"\n  jobManager:\n    resource:\n      memory: \"2048m\"\n      cpu: 1\n  taskManager:\n    resource:\n      memory: \"2048m\"\n      cpu: 1\n{volume}{job_spec}",
        yaml(&options.name),
        yaml(&image),
        yaml(&operator_version),
        options.parallelism
    );
    let session_job = format!(
        "apiVersion: flink.apache.org/v1beta1\nkind: FlinkSessionJob\nmetadata:\n  name: {}\nspec:\n  deploymentName: {}\n{job_spec}",
        yaml(&options.name),
        yaml(&options.session_cluster)
    );
    let session_note = format!(
        "# The session cluster `{}` must run the image below (it holds the connector jars and\n# the SQL runner) and mount the ConfigMap `{configmap}` at {script_dir}.\n",
        options.session_cluster
    );

    let mut dockerfile = format!(
        "# Image for {sql_name} on Flink {}: the SQL runner and the connector jars.\nFROM flink:{}\n",
        job.flink_version, job.flink_version
    );
    let _ = writeln!(dockerfile, "# A jar that runs a SQL script (e.g. the Flink Kubernetes Operator's flink-sql-runner-example).");
    let _ = writeln!(
        dockerfile,
        "COPY sql-runner.jar /opt/flink/usrlib/sql-runner.jar"
    );
    let mut jars = String::new();
    for jar in &job.jars {
        match &jar.url {
            Some(url) => {
                let _ = writeln!(dockerfile, "ADD {url} /opt/flink/lib/{}", jar.file);
                let _ = writeln!(jars, "{}\t{}\t{url}", jar.artifact, jar.file);
            }
            None => {
                let note = jar.note.clone().unwrap_or_default();
                let _ = writeln!(
                    dockerfile,
                    "# {note}\nCOPY {} /opt/flink/lib/{}",
                    jar.file, jar.file
                );
                let _ = writeln!(jars, "{}\t{}\t{note}", jar.artifact, jar.file);
            }
        }
    }
    let _ = writeln!(
        dockerfile,
        "RUN chown -R flink:flink /opt/flink/lib /opt/flink/usrlib"
    );
    if jars.is_empty() {
        jars.push_str("# no jars beyond Flink's distribution\n");
    }

    let report =
        serde_json::to_string_pretty(job).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    vec![
        BundleFile {
            name: sql_name,
            contents: job.changes.output.clone(),
        },
        BundleFile {
            name: format!("{stem}.flinkdeployment.yaml"),
            contents: deployment,
        },
        BundleFile {
            name: format!("{stem}.flinksessionjob.yaml"),
            contents: format!("{session_note}{session_job}"),
        },
        BundleFile {
            name: format!("{stem}.Dockerfile"),
            contents: dockerfile,
        },
        BundleFile {
            name: format!("{stem}.jars.txt"),
            contents: jars,
        },
        BundleFile {
            name: format!("{stem}.export.json"),
            contents: report + "\n",
        },
    ]
}
