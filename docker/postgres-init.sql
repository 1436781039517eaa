-- Databases beside POSTGRES_DB (jobs): MLflow's backend store and the Optuna studies.
CREATE DATABASE mlflow;
CREATE DATABASE optuna;
