<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="en" sourcelanguage="en">
<context>
    <name>forja::ui::ChatPane</name>
    <message numerus="yes">
        <source>%n token(s); mean log-prob per token: %1 under the base model, %2 with the adapter</source>
        <translation>
            <numerusform>%n token; mean log-prob per token: %1 under the base model, %2 with the adapter</numerusform>
            <numerusform>%n tokens; mean log-prob per token: %1 under the base model, %2 with the adapter</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n token(s)</source>
        <translation>
            <numerusform>%n token</numerusform>
            <numerusform>%n tokens</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>forja::ui::DataPane</name>
    <message numerus="yes">
        <source>max length %1: %n cut</source>
        <translation>
            <numerusform>max length %1: %n cut</numerusform>
            <numerusform>max length %1: %n cut</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>forja::ui::DoctorPane</name>
    <message numerus="yes">
        <source>Nothing to fix; %n note(s) below.</source>
        <translation>
            <numerusform>Nothing to fix; %n note below.</numerusform>
            <numerusform>Nothing to fix; %n notes below.</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n problem(s) to fix</source>
        <translation>
            <numerusform>%n problem to fix</numerusform>
            <numerusform>%n problems to fix</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n warning(s)</source>
        <translation>
            <numerusform>%n warning</numerusform>
            <numerusform>%n warnings</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>forja::ui::ModelPane</name>
    <message numerus="yes">
        <source>%n model(s) in the cache.</source>
        <translation>
            <numerusform>%n model in the cache.</numerusform>
            <numerusform>%n models in the cache.</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>forja::ui::RunsPane</name>
    <message numerus="yes">
        <source>%n run(s) in the history</source>
        <translation>
            <numerusform>%n run in the history</numerusform>
            <numerusform>%n runs in the history</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n runs selected.</source>
        <translation>
            <numerusform>%n run selected.</numerusform>
            <numerusform>%n runs selected.</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>forja::ui::TrainPane</name>
    <message numerus="yes">
        <source>Ready: Start runs %n step(s) in a worker process.</source>
        <translation>
            <numerusform>Ready: Start runs %n step in a worker process.</numerusform>
            <numerusform>Ready: Start runs %n steps in a worker process.</numerusform>
        </translation>
    </message>
</context>
</TS>
