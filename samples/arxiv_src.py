r"""LaTeX sources for the arXiv samples, written for refinery (invented papers, plausible prose).

2401.00001: multi-file submission (main.tex with macros, \input, \include, .bbl, .sty, a figure,
            a macOS ._ file) as .tar.gz
2401.00002: single .tex, served gzipped without tar
2401.00004/5: members of the bulk tar arXiv_src_2401_001.tar (a gzipped .tex; a gzipped tar)
"""
from __future__ import annotations

import struct

MAIN_TEX = r"""\documentclass[11pt]{article}
\usepackage{amsmath,amssymb,amsthm}
\usepackage{graphicx}
\usepackage{localmacros}
% Macros used throughout the paper.
\newcommand{\R}{\mathbb{R}}
\newcommand{\E}{\mathbb{E}}
\newcommand{\norm}[1]{\left\lVert #1 \right\rVert}
\def\eps{\varepsilon}
\def\MoM{\mathrm{MoM}}
\newtheorem{theorem}{Theorem}
\newtheorem{lemma}[theorem]{Lemma}

\title{Median-of-Means Estimators for Heavy-Tailed Streams}
\author{A. Lindqvist \and R. Okonkwo\\ Department of Statistics, Example University}
\date{January 2024}

\begin{document}
\maketitle

\begin{abstract}
We study the estimation of the mean of a real-valued stream whose distribution may have heavy
tails. The classical empirical mean is optimal for Gaussian data but its deviations degrade
sharply when only a few moments exist. We show that a one-pass median-of-means estimator with
$O(\log(1/\delta))$ memory attains sub-Gaussian deviation bounds with probability $1-\delta$,
and we give a simple rule for choosing the number of blocks online.
\end{abstract}

\input{sections/intro}

\include{method}

\section{Experiments}
\label{sec:experiments}
We compare the streaming estimator with the empirical mean and with a trimmed mean on synthetic
data drawn from Student-$t$ distributions with $\nu \in \{2.1, 3, 5\}$ degrees of freedom. Each
configuration is repeated $10^4$ times and we report the $99$th percentile of the absolute error.
% TODO: add the real-data experiment on network latencies before submission.
Figure~\ref{fig:error} shows that the median-of-means estimator keeps its advantage as the tails
become heavier, while the trimmed mean is sensitive to the choice of the trimming level.

\begin{figure}[t]
  \centering
  \includegraphics[width=0.6\linewidth]{figures/error.png}
  \caption{99th percentile of $|\hat\mu - \mu|$ against the sample size $n$.}
  \label{fig:error}
\end{figure}

\section{Conclusion}
A median-of-means estimator can be maintained in one pass with logarithmic memory and enjoys
deviation bounds that match the Gaussian case up to constants. Extending the construction to
vector-valued streams, where the median must be replaced by a geometric median, is left for
future work.

\bibliographystyle{plain}
\bibliography{refs}

\appendix
\section{Proof of Theorem~\ref{thm:main}}
\label{app:proof}
Let $Z_j = \mathbf{1}\{|\bar X_j - \mu| > \eps\}$. By Chebyshev's inequality each block mean
deviates by more than $\eps = 2\sigma\sqrt{k/n}$ with probability at most $1/4$, so
$\E Z_j \le 1/4$. The median fails only if at least $k/2$ of the $Z_j$ equal one, and
Hoeffding's inequality bounds this probability by $\exp(-k/8)$. Choosing $k = \lceil 8\log(1/\delta)\rceil$
completes the proof. \qed
\end{document}
"""

INTRO_TEX = r"""\section{Introduction}
\label{sec:intro}
Many monitoring systems summarise a stream of measurements by its mean: response times of a web
service, the size of network packets, or the energy used by a machine. These quantities are often
heavy-tailed, and a single extreme value can move the empirical mean far from the bulk of the data.
% An earlier draft also discussed quantile sketches; removed for space.

Robust alternatives such as the trimmed mean or Huber's estimator require either a second pass or
knowledge of the scale of the data. The median-of-means idea \cite{nemirovski1983,devroye2016}
avoids both: split the sample into $k$ blocks, average each block, and return the median of the
block means. Its deviations are sub-Gaussian as soon as the variance $\sigma^2$ is finite.

Our contribution is a streaming version that does not need the sample size in advance. We keep a
small number of running block means whose sizes double over time, and show in
Section~\ref{sec:method} that the resulting estimator satisfies the same bound as its offline
counterpart up to a factor of two.
"""

METHOD_TEX = r"""\section{A one-pass estimator}
\label{sec:method}
Let $X_1, X_2, \dots$ be independent copies of a random variable $X$ with mean $\mu$ and variance
$\sigma^2 < \infty$. For a confidence level $\delta \in (0,1)$ set $k = \lceil 8 \log(1/\delta) \rceil$.
The offline estimator is
\begin{equation}
  \label{eq:mom}
  \hat\mu_{\MoM} = \operatorname{median}\bigl(\bar X_1, \dots, \bar X_k\bigr),
  \qquad \bar X_j = \frac{k}{n} \sum_{i \in B_j} X_i ,
\end{equation}
where $B_1, \dots, B_k$ partition $\{1, \dots, n\}$ into blocks of equal size.

\begin{theorem}
\label{thm:main}
With probability at least $1-\delta$,
\[
  |\hat\mu_{\MoM} - \mu| \le 2\sigma \sqrt{\frac{8\log(1/\delta)}{n}} .
\]
\end{theorem}

In the streaming setting $n$ is unknown. We therefore maintain $k$ accumulators and a current
block length $m$; when every accumulator has received $m$ values, adjacent pairs are merged and
$m$ is doubled. Merging keeps the block means unbiased, and a union bound over the
$O(\log n)$ doubling steps costs only the constant in Theorem~\ref{thm:main}. The memory used is
$O(k)$ numbers, independent of the length of the stream.
"""

MAIN_BBL = r"""\begin{thebibliography}{3}

\bibitem{devroye2016}
L.~Devroye, M.~Lerasle, G.~Lugosi, and R.~I. Oliveira.
\newblock Sub-{G}aussian mean estimators.
\newblock {\em The Annals of Statistics}, 44(6):2695--2725, 2016.

\bibitem{nemirovski1983}
A.~S. Nemirovski and D.~B. Yudin.
\newblock {\em Problem Complexity and Method Efficiency in Optimization}.
\newblock Wiley, 1983.

\bibitem{huber1964}
P.~J. Huber.
\newblock Robust estimation of a location parameter.
\newblock {\em The Annals of Mathematical Statistics}, 35(1):73--101, 1964.

\end{thebibliography}
"""

LOCAL_STY = r"""\NeedsTeXFormat{LaTeX2e}
\ProvidesPackage{localmacros}[2024/01/10 macros for the median-of-means paper]
\RequirePackage{xcolor}
\newcommand{\todo}[1]{\textcolor{red}{[TODO: #1]}}
\providecommand{\qed}{\hfill$\square$}
\endinput
"""

REFS_BIB = r"""@article{devroye2016,
  author = {Devroye, L. and Lerasle, M. and Lugosi, G. and Oliveira, R. I.},
  title = {Sub-Gaussian mean estimators},
  journal = {The Annals of Statistics},
  year = {2016}
}
"""


def png_stub() -> bytes:
    """A valid 1x1 grey PNG: signature, IHDR, IDAT, IEND."""
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00\x80", 9)) + chunk(b"IEND", b"")


def apple_double() -> bytes:
    """A macOS AppleDouble `._` file (what Finder leaves in tarballs): magic, version, one entry."""
    finder_info = b"TEXTttxt" + b"\x00" * 24
    header = struct.pack(">II16sH", 0x00051607, 0x00020000, b"Mac OS X        ", 1)
    entry = struct.pack(">III", 9, 26 + 12, len(finder_info))
    return header + entry + finder_info


def multi_file_members() -> list[tuple[str, bytes]]:
    return [
        ("main.tex", MAIN_TEX.encode()),
        ("._main.tex", apple_double()),
        ("sections/intro.tex", INTRO_TEX.encode()),
        ("method.tex", METHOD_TEX.encode()),
        ("main.bbl", MAIN_BBL.encode()),
        ("refs.bib", REFS_BIB.encode()),
        ("localmacros.sty", LOCAL_STY.encode()),
        ("figures/error.png", png_stub()),
    ]


SINGLE_TEX = r"""\documentclass[aps,prb,twocolumn]{revtex4-2}
\usepackage{amsmath}
\newcommand{\kB}{k_{\mathrm{B}}}
\def\Tavg{\bar{T}}

\begin{document}
\title{Thermal conductance of a disordered chain of coupled oscillators}
\author{M. Ferreira}
\affiliation{Institute of Physics, Example University}
\date{\today}

\begin{abstract}
We compute the thermal conductance of a one-dimensional chain of harmonic oscillators with random
masses connected to two heat baths. For weak disorder the conductance decreases with the length
of the chain as a power law, and we identify the crossover to the localized regime.
\end{abstract}
\maketitle

\section{Introduction}
Heat transport in low-dimensional systems differs markedly from the predictions of Fourier's law.
In ordered harmonic chains phonons travel ballistically and the conductance does not depend on the
length $N$ of the chain. Disorder in the masses scatters the phonons, and in one dimension all
modes above a frequency that scales as $N^{-1/2}$ become localized~\cite{rubin1971,dhar2001}.

% The anharmonic case is discussed in a companion paper.
Here we revisit the problem with a transfer-matrix approach that handles chains of up to $10^6$
sites and arbitrary bath spectra.

\section{Model}
The chain has $N$ particles with masses $m_n = \bar m (1 + \eta_n)$, where the $\eta_n$ are
independent and uniformly distributed in $[-w, w]$. Neighbours interact through springs of
stiffness $\kappa$, and the end particles are coupled to Langevin baths at temperatures
$\Tavg \pm \Delta T / 2$. The heat current in the steady state is
\begin{equation}
  J = \frac{\kB \Delta T}{4\pi} \int_0^{\omega_{\max}} \mathcal{T}_N(\omega)\, d\omega ,
\end{equation}
where $\mathcal{T}_N(\omega)$ is the transmission coefficient of a phonon of frequency $\omega$.

\section{Results}
For $w = 0.2$ the conductance follows $G \propto N^{-1/2}$ over three decades, in agreement with
the scaling argument for fixed boundary conditions. Free boundaries change the exponent to
$-3/2$, which shows that the low-frequency behaviour of the baths controls the transport.
At larger disorder, $w > 0.6$, deviations appear for short chains but the asymptotic exponent is
unchanged.

\begin{thebibliography}{2}
\bibitem{rubin1971} R.~J. Rubin and W.~L. Greer, J. Math. Phys. \textbf{12}, 1686 (1971).
\bibitem{dhar2001} A. Dhar, Phys. Rev. Lett. \textbf{86}, 5882 (2001).
\end{thebibliography}
\end{document}
"""

BULK_SINGLE_TEX = r"""\documentclass{amsart}
\newcommand{\N}{\mathbb{N}}
\newtheorem{proposition}{Proposition}
\begin{document}
\title{Lattice paths avoiding a horizontal segment}
\author{K. Nowicka}
\maketitle

\begin{abstract}
We count the lattice paths from $(0,0)$ to $(n,n)$ with unit east and north steps that never use
a given horizontal segment, and show that the answer is a simple difference of binomial
coefficients.
\end{abstract}

\section{Introduction}
The number of monotone lattice paths from $(0,0)$ to $(n,n)$ is $\binom{2n}{n}$. A classical
exercise asks how many of them avoid a single forbidden step. % an old exam problem
Surprisingly the answer depends only on the position of the step through two binomial coefficients,
and the argument extends to several forbidden steps on one row.

\section{The count}
\begin{proposition}
Let $e$ be the east step from $(a,b)$ to $(a+1,b)$. The number of paths avoiding $e$ equals
\[
  \binom{2n}{n} - \binom{a+b}{a}\binom{2n-a-b-1}{n-b}.
\]
\end{proposition}
\begin{proof}
A path uses $e$ exactly when it passes through $(a,b)$ and then through $(a+1,b)$. The paths to
$(a,b)$ number $\binom{a+b}{a}$, and the paths from $(a+1,b)$ to $(n,n)$ number
$\binom{2n-a-b-1}{n-b}$. Subtracting their product from the total gives the claim.
\end{proof}
\end{document}
"""

BULK_PAPER_TEX = r"""\documentclass[conference]{IEEEtran}
\usepackage{graphicx}
\newcommand{\sys}{\textsc{Sieve}}
\begin{document}
\title{\sys: Filtering Sensor Readings at the Edge}
\author{\IEEEauthorblockN{J. Park and L. Moreau}}
\maketitle

\begin{abstract}
Battery-powered sensors spend most of their energy on the radio. We present \sys, a filter that
runs on the sensor and sends a reading only when it changes the estimate held by the base station
by more than a tolerance chosen by the user.
\end{abstract}

\section{Introduction}
Wireless sensor networks measure temperature, humidity or vibration at regular intervals. Most
consecutive readings are nearly identical, yet a naive node transmits all of them. Suppressing
redundant readings on the node saves energy, but the base station must still be able to
reconstruct the signal within a known error.

\input{sec/results}

\bibliographystyle{IEEEtran}
\bibliography{paper}
\end{document}
"""

BULK_RESULTS_TEX = r"""\section{Evaluation}
We deployed \sys{} on twelve nodes in an office building for three weeks. With a tolerance of
$0.1\,^\circ$C the nodes transmitted only 6\% of their temperature readings, and the median
battery life grew from 41 to 170 days. The reconstruction error never exceeded the tolerance,
as guaranteed by the design. Figure~\ref{fig:tx} shows the transmissions of one node over a day.
\begin{figure}
\centering
\includegraphics[width=\columnwidth]{fig1}
\caption{Transmissions of node 7 during one day.}
\label{fig:tx}
\end{figure}
"""

BULK_PAPER_BBL = r"""\begin{thebibliography}{1}
\bibitem{madden2005} S.~Madden \emph{et~al.}, ``TinyDB: an acquisitional query processing system
for sensor networks,'' \emph{ACM TODS}, vol.~30, no.~1, 2005.
\end{thebibliography}
"""

FIG1_EPS = b"""%!PS-Adobe-3.0 EPSF-3.0
%%BoundingBox: 0 0 100 50
newpath 0 0 moveto 100 50 lineto stroke
showpage
%%EOF
"""


def bulk_multi_members() -> list[tuple[str, bytes]]:
    return [
        ("paper.tex", BULK_PAPER_TEX.encode()),
        ("sec/results.tex", BULK_RESULTS_TEX.encode()),
        ("paper.bbl", BULK_PAPER_BBL.encode()),
        ("fig1.eps", FIG1_EPS),
    ]
